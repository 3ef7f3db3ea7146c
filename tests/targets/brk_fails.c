/* Moves of the break that fail beside ones that do not: a 3-page region
 * from map_pages and a page at 4 GiB, below the break (MAP_FIXED_NOREPLACE,
 * from main), the break moved up a page by sbrk, and a byte by sbrk(1),
 * then an sbrk of 64 TiB and a brk as far, which the kernel refuses
 * (ENOMEM) and which change nothing.  Nothing is unmapped.  Exits 1 if a refused call did not fail,
 * or anything moved. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096

__attribute__((noinline)) static char *map_pages(size_t pages)
{
    return mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

int main(void)
{
    char *region = map_pages(3);
    char *low = mmap((void *)(UINT64_C(1) << 32), PAGE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    char *before = sbrk(PAGE);
    if (region == MAP_FAILED || low != (void *)(UINT64_C(1) << 32) || low > before || before == (void *)-1 ||
        sbrk(1) != before + PAGE)
        return 1;
    char *top = sbrk(0);
    errno = 0;
    if (sbrk((intptr_t)1 << 46) != (void *)-1 || errno != ENOMEM)
        return 1;
    errno = 0;
    if (brk(top + ((intptr_t)1 << 46)) != -1 || errno != ENOMEM)
        return 1;
    region[3 * PAGE - 1] = 1;
    low[PAGE - 1] = 1;
    before[PAGE - 1] = 1;
    return sbrk(0) == top ? 0 : 1;
}
