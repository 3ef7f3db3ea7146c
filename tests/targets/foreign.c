/* Pointers the monitor never returned: blocks from glibc's __libc_malloc
 * freed and reallocated through the interposed functions, and, with the
 * argument "hidden", a block from the interposed malloc freed behind the
 * monitor's back (which only MPROF_BLOCKS=map survives: glibc would be
 * handed a block with a header).
 *
 *     foreign [hidden] */
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

int main(int argc, char **argv)
{
    void *foreign = __libc_malloc(64);
    free(foreign); /* an unknown free */
    char *moved = __libc_malloc(32);
    strcpy(moved, "foreign");
    moved = realloc(moved, 4096); /* an unknown free and a new block of 4096 */
    if (strcmp(moved, "foreign"))
        return 1;
    free(moved);
    if (argc < 2 || strcmp(argv[1], "hidden"))
        return 0;
    void *hidden = malloc(48);
    __libc_free(hidden); /* the monitor still counts it as kept */
    return 0;
}
