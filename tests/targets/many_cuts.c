/* 1,000 times over: reserve maps 17 pages without access, map_page maps
 * each of them anew (MAP_FIXED, one call a page, from the lowest), and one
 * munmap takes all 17 pages at once: more regions in one call than the
 * monitor keeps a call's cuts for on its stack (16).  Nothing is left
 * mapped.  Exits 1 if a call failed or put a page elsewhere. */
#define _GNU_SOURCE
#include <stddef.h>
#include <sys/mman.h>

#define PAGE 4096
#define PAGES 17
#define ROUNDS 1000

__attribute__((noinline)) static char *reserve(void)
{
    return mmap(NULL, PAGES * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

__attribute__((noinline)) static char *map_page(char *at)
{
    return mmap(at, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

int main(void)
{
    for (int round = 0; round < ROUNDS; round++) {
        char *area = reserve();
        if (area == MAP_FAILED)
            return 1;
        for (int page = 0; page < PAGES; page++)
            if (map_page(area + page * PAGE) != area + page * PAGE)
                return 1;
        if (munmap(area, PAGES * PAGE))
            return 1;
    }
    return 0;
}
