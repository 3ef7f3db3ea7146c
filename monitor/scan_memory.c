/* The leak scan's regions (scan_memory.h), and the list of them that the
 * roots leave out. */
#include "scan_memory.h"

#include <sys/mman.h>

#include "arena.h"

#define SCAN_REGIONS_MAX 64u
#define PAGE 4096u
#define HUGE_PAGE (2u << 20)

/* The regions mapped now.  Guarded by the data file writer's lock: one
 * scan at a time, on the thread that writes. */
static struct address_range regions[SCAN_REGIONS_MAX];
static unsigned region_count;

static size_t page_round(size_t size)
{
    return (size + PAGE - 1) & ~(size_t)(PAGE - 1);
}

static void forget(uintptr_t start)
{
    for (unsigned i = 0; i < region_count; i++) {
        if (regions[i].start == start) {
            regions[i] = regions[--region_count];
            return;
        }
    }
}

static bool remember(uintptr_t start, size_t size)
{
    if (region_count == SCAN_REGIONS_MAX)
        return false;
    regions[region_count].start = start;
    regions[region_count++].end = start + size;
    return true;
}

/* The scan's large arrays (16 bytes a block) in huge pages where the
 * kernel has them: a fault per 2 MiB, not per page, and fewer misses of
 * the TLB. */
static void huge_pages(void *region, size_t size)
{
    if (size >= HUGE_PAGE)
        system_madvise(region, size, MADV_HUGEPAGE);
}

void *scan_map(size_t size)
{
    size = page_round(size ? size : 1);
    void *region = system_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED)
        return NULL;
    if (!remember((uintptr_t)region, size)) {
        system_munmap(region, size);
        return NULL;
    }
    huge_pages(region, size);
    return region;
}

void *scan_grow(void *region, size_t old_size, size_t new_size)
{
    old_size = page_round(old_size);
    new_size = page_round(new_size);
    if (new_size <= old_size)
        return region;
    void *grown = system_mremap(region, old_size, new_size, MREMAP_MAYMOVE, NULL);
    if (grown == MAP_FAILED)
        return NULL;
    forget((uintptr_t)region);
    remember((uintptr_t)grown, new_size);
    huge_pages(grown, new_size);
    return grown;
}

void scan_unmap(void *region, size_t size)
{
    if (!region)
        return;
    forget((uintptr_t)region);
    system_munmap(region, page_round(size ? size : 1));
}

bool scan_memory_within(uintptr_t start, uintptr_t end, uintptr_t *cut_start, uintptr_t *cut_end)
{
    return address_range_first_overlap(regions, region_count, start, end, cut_start, cut_end);
}
