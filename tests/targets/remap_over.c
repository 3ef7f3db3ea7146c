/* mremap calls that only unmap or only map, beside a page mapped first (so
 * above the others, as the kernel maps top-down): a file's mapping (no
 * region) moved with MREMAP_FIXED onto the second of a 4-page region's pages,
 * which it replaces (the region keeps pages 1 and 3-4, two regions), and a
 * 2-page region moved with MREMAP_DONTUNMAP, which leaves the old range
 * mapped and maps 2 pages anew where nothing was.  Then every region is
 * unmapped but the first page of the first; the file's mapping too (not
 * counted), and the file closed.  Exits 1 if the kernel put anything elsewhere. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096

__attribute__((noinline)) static char *map_pages(size_t pages)
{
    return mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

int main(void)
{
    char *above = map_pages(1);
    char *region = map_pages(4);
    char *pair = map_pages(2);
    FILE *file = tmpfile();
    static char page[PAGE];
    if (above == MAP_FAILED || region == MAP_FAILED || pair == MAP_FAILED || !file || fwrite(page, 1, PAGE, file) != PAGE ||
        fflush(file) != 0)
        return 1;
    memset(region, 1, 4 * PAGE);
    memset(pair, 2, 2 * PAGE);
    char *text = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fileno(file), 0);
    if (text == MAP_FAILED)
        return 1;
    char *moved = mremap(text, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, region + PAGE);
    char *copy = mremap(pair, 2 * PAGE, 2 * PAGE, MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
    if (moved != region + PAGE || copy == MAP_FAILED || copy == pair || copy[PAGE] != 2)
        return 1;
    if (munmap(region + 2 * PAGE, 2 * PAGE) || munmap(pair, 2 * PAGE) || munmap(copy, 2 * PAGE) ||
        munmap(moved, PAGE) || munmap(above, PAGE) || fclose(file))
        return 1;
    return region[0] == 1 ? 0 : 1;
}
