/* Pointers the monitor never returned: blocks from glibc's __libc_malloc
 * freed and reallocated through the interposed functions, and a block from
 * the interposed malloc freed behind the monitor's back. */
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

int main(void)
{
    void *foreign = __libc_malloc(64);
    free(foreign); /* an unknown free */
    char *moved = __libc_malloc(32);
    strcpy(moved, "foreign");
    moved = realloc(moved, 4096); /* an unknown free and a new block of 4096 */
    if (strcmp(moved, "foreign"))
        return 1;
    free(moved);
    void *hidden = malloc(48);
    __libc_free(hidden); /* the monitor still counts it as kept */
    return 0;
}
