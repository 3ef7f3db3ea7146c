/* Test target for the leak scan (issue 49): a lost block of SIZE bytes
 * (argv[1], 6 by default) whose chunk's next neighbour is free in a
 * fastbin.  glibc's main arena (in the C library's data) then points at
 * that neighbour's chunk: where the 6 bytes start when they carry the
 * monitor's header, or 16 bytes into a block of 20 without one (the block
 * map), which uses the next chunk's first word.
 * Expected, as memcheck says: definitely lost 1 x SIZE (tiny), still
 * reachable 0; the neighbours freed. */
#include <stdlib.h>
#include <string.h>

#define SAME_SIZE 7 /* fill the tcache of the neighbour's size */

__attribute__((noinline)) static char *tiny(size_t size)
{
    char *block = malloc(size);
    memset(block, 'x', size);
    return block;
}

int main(int argc, char **argv)
{
    size_t size = argc > 1 ? (size_t)atoi(argv[1]) : 6;
    void *others[SAME_SIZE];
    for (int i = 0; i < SAME_SIZE; i++)
        others[i] = malloc(40);
    char *volatile lost = tiny(size);
    void *neighbour = malloc(40);
    for (int i = 0; i < SAME_SIZE; i++)
        free(others[i]);
    free(neighbour); /* the tcache is full: into the fastbin, main_arena points at it */
    lost = NULL;
    return 0;
}
