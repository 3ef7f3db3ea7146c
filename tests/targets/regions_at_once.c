/* More regions at once than the monitor's table of regions starts with
 * (256), and two calls that map no new memory.  map_three maps 3 pages
 * first (above the others, as the kernel maps top-down); map_page maps 300
 * pages one at a time, all kept; the middle one of the three is unmapped,
 * then the first 100 of the 300.  map_shared maps a
 * 4-page shared anonymous region, whose last 3 pages mremap with an old
 * size of 0 duplicates (the same pages at a second address, no new
 * memory); the duplicate is unmapped, then the region.  Last, brk to where the break
 * already is.  And map_bytes maps 6,000 bytes, which the kernel maps as 2
 * pages, and unmaps them by the same length.  200 pages are left mapped,
 * and two of the three.  Exits 1 if a call failed or the
 * duplicate does not show the region's pages. */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096
#define PAGES 300
#define UNMAPPED 100

__attribute__((noinline)) static char *map_page(void)
{
    return mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

__attribute__((noinline)) static char *map_three(void)
{
    return mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

__attribute__((noinline)) static char *map_shared(size_t pages)
{
    return mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
}

__attribute__((noinline)) static char *map_bytes(size_t bytes)
{
    return mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

int main(void)
{
    static char *pages[PAGES];
    char *three = map_three();
    if (three == MAP_FAILED)
        return 1;
    for (int i = 0; i < PAGES; i++) {
        pages[i] = map_page();
        if (pages[i] == MAP_FAILED)
            return 1;
        pages[i][0] = (char)i;
    }
    if (munmap(three + PAGE, PAGE))
        return 1;
    three[0] = three[2 * PAGE] = 1;
    for (int i = 0; i < UNMAPPED; i++)
        if (munmap(pages[i], PAGE))
            return 1;
    char *shared = map_shared(4);
    if (shared == MAP_FAILED)
        return 1;
    memset(shared, 7, 4 * PAGE);
    char *duplicate = mremap(shared + PAGE, 0, 3 * PAGE, MREMAP_MAYMOVE);
    if (duplicate == MAP_FAILED || duplicate == shared + PAGE)
        return 1;
    duplicate[2 * PAGE] = 9;
    if (shared[3 * PAGE] != 9 || munmap(duplicate, 3 * PAGE) || munmap(shared, 4 * PAGE))
        return 1;
    if (brk(sbrk(0)))
        return 1;
    char *odd = map_bytes(6000);
    if (odd == MAP_FAILED)
        return 1;
    odd[2 * PAGE - 1] = 1; /* the second page's last byte: mapped, as the page is whole */
    if (munmap(odd, 6000))
        return 1;
    for (int i = UNMAPPED; i < PAGES; i++)
        if (pages[i][0] != (char)i)
            return 1;
    return 0;
}
