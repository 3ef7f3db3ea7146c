/* Test target for the leak scan (issue 49): a lost block of 6 bytes whose
 * chunk's next neighbour is free in a fastbin.  glibc's main arena (in the
 * C library's data, a root) then points at that neighbour's chunk, which
 * starts where the 6 bytes start when they carry the monitor's header.
 * Expected, as memcheck says: definitely lost 1 x 6 (tiny), still
 * reachable 0; the neighbours freed. */
#include <stdlib.h>
#include <string.h>

#define SAME_SIZE 7 /* fill the tcache of the neighbour's size */

__attribute__((noinline)) static char *tiny(void)
{
    char *block = malloc(6);
    memcpy(block, "linux", 6);
    return block;
}

int main(void)
{
    void *others[SAME_SIZE];
    for (int i = 0; i < SAME_SIZE; i++)
        others[i] = malloc(40);
    char *volatile lost = tiny();
    void *neighbour = malloc(40);
    for (int i = 0; i < SAME_SIZE; i++)
        free(others[i]);
    free(neighbour); /* the tcache is full: into the fastbin, main_arena points at it */
    lost = NULL;
    return 0;
}
