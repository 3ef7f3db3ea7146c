/* Maps 1,000 regions of a page, one at a time where the kernel chooses
 * (map_page), r-- and rw- by turns, and unmaps the lowest of them: the
 * region the monitor keeps first, with 999 above it.  Prints "ok". */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>

#define P ((size_t)4096)
#define REGIONS 1000

__attribute__((noinline)) static char *map_page(int protection)
{
    return mmap(NULL, P, protection, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

int main(void)
{
    char *lowest = NULL;
    for (int i = 0; i < REGIONS; i++) {
        char *page = map_page(i % 2 ? PROT_READ : PROT_READ | PROT_WRITE);
        if (page == MAP_FAILED)
            return 1;
        if (!lowest || page < lowest)
            lowest = page;
    }
    if (munmap(lowest, P) != 0)
        return 1;
    puts("ok");
    return 0;
}
