/* Maps memory itself beside two allocators: malloc's (whatever allocator
 * is preloaded) and prefixed_allocator.c's je_ functions, which it links.
 * A block of 100 bytes from je_malloc, and one of 16 MiB from malloc
 * (more than a preloaded allocator's first mappings hold), both freed; map_pages maps 3 pages, of which the first is unmapped.  Exits 1
 * if a call failed. */
#include <stdlib.h>
#include <sys/mman.h>

#define PAGE 4096

void *je_malloc(size_t size);
void je_free(void *block);

__attribute__((noinline)) static char *map_pages(size_t pages)
{
    return mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

int main(void)
{
    char *item = je_malloc(100), *block = malloc(16 << 20);
    char *region = map_pages(3);
    if (!item || !block || region == MAP_FAILED || munmap(region, PAGE))
        return 1;
    region[PAGE] = item[0] = block[0] = 1;
    je_free(item);
    free(block);
    return 0;
}
