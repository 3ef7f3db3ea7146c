/* The flood of memcheck's leak check over an index of sorted blocks.
 * A word reaches a block when it points into it (its start, or one of its
 * bytes; a block of size 0 only at its start).  From a root or a reachable
 * block a pointer to the start, or one memcheck's heuristics accept
 * inside it, makes the block reachable; any other pointer to it, or any
 * pointer from a possibly lost block, makes it possibly lost.  A block
 * whose state rises is scanned (again).  Then each block still unreached,
 * in address order, leads a clique: the unreached blocks it reaches are
 * indirectly lost, earlier leaders among them too. */
#include "reach.h"

#include <string.h>

#include "arena.h"

#define PAGE_BITS 12
/* Blocks further apart start a new region of the index. */
#define REGION_GAP (1u << 20)
#define WORD 8u

static bool grow(void **array, size_t *room, size_t needed, size_t entry)
{
    if (needed * entry <= *room)
        return true;
    size_t bytes = *room ? *room : 64 * 1024;
    while (bytes < needed * entry)
        bytes *= 2;
    void *grown = *array ? region_grow(*array, *room, bytes) : region_map(bytes);
    if (!grown)
        return false;
    *array = grown;
    *room = bytes;
    return true;
}

void reach_add(void *context, uintptr_t start, uint64_t size, uint32_t record)
{
    struct reach *reach = context;
    if (reach->out_of_memory ||
        !grow((void **)&reach->blocks, &reach->room, reach->count + 1, sizeof(struct reach_block))) {
        reach->out_of_memory = true;
        return;
    }
    reach->blocks[reach->count++] = (struct reach_block){start, size, record, REACH_UNREACHED};
}

/* By start, a byte a pass from the lowest, the passes of bytes every block
 * shares skipped (as the writer sorts addresses, without the allocator). */
static struct reach_block *sort_blocks(struct reach_block *items, struct reach_block *spare, size_t count)
{
    for (unsigned shift = 0; shift < 64 && count; shift += 8) {
        size_t starts[256] = {0};
        for (size_t i = 0; i < count; i++)
            starts[(items[i].start >> shift) & 255]++;
        if (starts[(items[0].start >> shift) & 255] == count)
            continue;
        size_t sum = 0;
        for (unsigned digit = 0; digit < 256; digit++) {
            size_t digit_count = starts[digit];
            starts[digit] = sum;
            sum += digit_count;
        }
        for (size_t i = 0; i < count; i++)
            spare[starts[(items[i].start >> shift) & 255]++] = items[i];
        struct reach_block *sorted = spare;
        spare = items;
        items = sorted;
    }
    return items;
}

static bool sorted(const struct reach *reach)
{
    for (size_t i = 1; i < reach->count; i++)
        if (reach->blocks[i - 1].start > reach->blocks[i].start)
            return false;
    return true;
}

static bool sort(struct reach *reach)
{
    if (sorted(reach))
        return true;
    size_t bytes = reach->count * sizeof(struct reach_block);
    struct reach_block *spare = region_map(bytes);
    if (!spare)
        return false;
    struct reach_block *result = sort_blocks(reach->blocks, spare, reach->count);
    if (result == spare)
        memcpy(reach->blocks, spare, bytes);
    region_unmap(spare, bytes);
    return true;
}

/* Drops duplicates, and blocks that hold the next one (the outer of two
 * nested), so that no two overlap. */
static void drop_overlaps(struct reach *reach)
{
    size_t kept = 0;
    for (size_t i = 0; i < reach->count; i++) {
        const struct reach_block *block = &reach->blocks[i];
        while (kept && reach->blocks[kept - 1].start + reach->blocks[kept - 1].size > block->start)
            kept--;
        reach->blocks[kept++] = *block;
    }
    reach->count = kept;
}

static uintptr_t block_end(const struct reach_block *block)
{
    return block->start + (block->size ? block->size : 1);
}

static bool index_blocks(struct reach *reach)
{
    size_t page_total = 0;
    reach->region_count = 0;
    for (size_t i = 0; i < reach->count; i++) {
        const struct reach_block *block = &reach->blocks[i];
        struct reach_region *last = reach->region_count ? &reach->regions[reach->region_count - 1] : NULL;
        if (last && block->start < last->high + REGION_GAP) {
            if (block_end(block) > last->high)
                last->high = block_end(block);
            continue;
        }
        if (last)
            page_total += ((last->high - last->low) >> PAGE_BITS) + 2;
        if (!grow((void **)&reach->regions, &reach->regions_room, reach->region_count + 1,
                  sizeof(struct reach_region)))
            return false;
        reach->regions[reach->region_count++] = (struct reach_region){block->start, block_end(block), i, NULL, 0};
    }
    if (reach->region_count) {
        struct reach_region *last = &reach->regions[reach->region_count - 1];
        page_total += ((last->high - last->low) >> PAGE_BITS) + 2;
    }
    if (!grow((void **)&reach->pages, &reach->pages_room, page_total + 1, sizeof(uint32_t)))
        return false;
    uint32_t *pages = reach->pages;
    for (size_t r = 0; r < reach->region_count; r++) {
        struct reach_region *region = &reach->regions[r];
        size_t end = r + 1 < reach->region_count ? reach->regions[r + 1].first : reach->count;
        region->page_count = ((region->high - region->low) >> PAGE_BITS) + 1;
        region->pages = pages;
        size_t block = region->first;
        for (size_t page = 0; page <= region->page_count; page++) {
            uintptr_t page_start = region->low + ((uintptr_t)page << PAGE_BITS);
            while (block < end && reach->blocks[block].start < page_start)
                block++;
            pages[page] = (uint32_t)(block - region->first);
        }
        pages += region->page_count + 1;
    }
    reach->low = reach->region_count ? reach->regions[0].low : 0;
    reach->high = reach->region_count ? reach->regions[reach->region_count - 1].high : 0;
    return true;
}

bool reach_prepare(struct reach *reach, const struct memory_map *map)
{
    reach->map = map;
    if (reach->out_of_memory || !sort(reach))
        return false;
    drop_overlaps(reach);
    /* Each block is pushed at most three times: reached possibly, reached,
     * and in a clique. */
    if (!grow((void **)&reach->stack, &reach->stack_room, 3 * reach->count + 1, sizeof(uint32_t)) ||
        !index_blocks(reach)) {
        reach->out_of_memory = true;
        return false;
    }
    return true;
}

/* The block that holds address, or -1. */
static ptrdiff_t find_block(const struct reach *reach, uintptr_t address)
{
    size_t low = 0, high = reach->region_count;
    while (low < high) { /* the last region starting at or before address */
        size_t middle = low + (high - low) / 2;
        if (reach->regions[middle].low <= address)
            low = middle + 1;
        else
            high = middle;
    }
    if (!low)
        return -1;
    const struct reach_region *region = &reach->regions[low - 1];
    if (address >= region->high)
        return -1;
    size_t page = (address - region->low) >> PAGE_BITS;
    /* Blocks before first start before this page; blocks from first up to
     * last start in it.  The one that holds address is the last to start
     * at or before it. */
    size_t first = region->first + region->pages[page], last = region->first + region->pages[page + 1];
    size_t below = first, above = last;
    while (below < above) {
        size_t middle = below + (above - below) / 2;
        if (reach->blocks[middle].start <= address)
            below = middle + 1;
        else
            above = middle;
    }
    if (below == region->first)
        return -1;
    const struct reach_block *block = &reach->blocks[below - 1];
    if (address < block_end(block))
        return (ptrdiff_t)(below - 1);
    return -1;
}

bool reach_holds_block(const struct reach *reach, uintptr_t start, uintptr_t end)
{
    size_t low = 0, high = reach->count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (reach->blocks[middle].start < start)
            low = middle + 1;
        else
            high = middle;
    }
    return low < reach->count && reach->blocks[low].start < end;
}

static bool vtable_address(const struct reach *reach, uint64_t address)
{
    if (address % WORD || address < 4096)
        return false;
    const struct mapping *mapping = memory_map_find(reach->map, address);
    return mapping && mapping->file && mapping->readable;
}

/* memcheck's default heuristics (--leak-check-heuristics=all): an interior
 * pointer that a C++ runtime or a common allocator keeps to a block it
 * owns.  The block's first words are read only where it has them. */
static bool heuristic_reach(const struct reach *reach, const struct reach_block *block, uintptr_t pointer)
{
    const uint64_t *words = (const uint64_t *)block->start;
    uint64_t offset = pointer - block->start;
    /* stdstring: length, capacity, refcount before the characters, the
     * block exactly long enough for capacity and the NUL. */
    if (offset == 3 * WORD && block->size >= 3 * WORD && 3 * WORD + words[1] + 1 == block->size &&
        words[0] <= words[1])
        return true;
    if (offset == WORD && block->size >= WORD) {
        /* length64: the length of the rest before it (sqlite3's). */
        if (words[0] > 0 && block->size - WORD == words[0])
            return true;
        /* newarray: the element count before a new[] array of objects
         * with a destructor. */
        if (words[0] > 0 && (block->size - WORD) % words[0] == 0)
            return true;
    }
    /* multipleinheritance: a second base's vtable pointer inside the
     * object, the first base's at its start. */
    if (pointer % WORD == 0 && offset + WORD <= block->size && block->size >= WORD &&
        vtable_address(reach, *(const uint64_t *)pointer) && vtable_address(reach, words[0]))
        return true;
    return false;
}

static void push(struct reach *reach, size_t block)
{
    if (reach->stack_count < reach->stack_room / sizeof(uint32_t))
        reach->stack[reach->stack_count++] = (uint32_t)block;
}

/* A word of memory scanned from a block or root in the state from. */
static inline void reach_word(struct reach *reach, uint64_t value, enum reach_state from)
{
    if (value - reach->low >= reach->high - reach->low)
        return;
    ptrdiff_t found = find_block(reach, value);
    if (found < 0)
        return;
    struct reach_block *block = &reach->blocks[found];
    if (block->state == REACH_REACHABLE)
        return;
    if (reach->glibc_chunks && value % 16 == 0 && value != block->start && value + WORD >= block->start + block->size)
        return; /* the next chunk's, no pointer of the program's */
    if (from == REACH_REACHABLE && (value == block->start || heuristic_reach(reach, block, value))) {
        block->state = REACH_REACHABLE;
        push(reach, (size_t)found);
    } else if (block->state == REACH_UNREACHED) {
        block->state = REACH_POSSIBLE;
        push(reach, (size_t)found);
    }
}

static void scan_words(struct reach *reach, uintptr_t start, uintptr_t end, enum reach_state from)
{
    start = (start + WORD - 1) & ~(uintptr_t)(WORD - 1);
    for (const uint64_t *word = (const uint64_t *)start; (uintptr_t)(word + 1) <= end; word++)
        reach_word(reach, *word, from);
}

static void flood(struct reach *reach)
{
    while (reach->stack_count) {
        const struct reach_block *block = &reach->blocks[reach->stack[--reach->stack_count]];
        reach->block_bytes += block->size;
        scan_words(reach, block->start, block->start + block->size, (enum reach_state)block->state);
    }
}

void reach_scan_root(struct reach *reach, uintptr_t start, uintptr_t end)
{
    if (end <= start || !reach->region_count)
        return;
    reach->root_bytes += end - start;
    scan_words(reach, start, end, REACH_REACHABLE);
    flood(reach);
}

void reach_root_words(struct reach *reach, const uint64_t *words, size_t count)
{
    for (size_t i = 0; i < count && reach->region_count; i++)
        reach_word(reach, words[i], REACH_REACHABLE);
    flood(reach);
}

/* The clique of leader: every unreached block it reaches, but itself. */
static void clique(struct reach *reach, size_t leader)
{
    push(reach, leader);
    while (reach->stack_count) {
        const struct reach_block *block = &reach->blocks[reach->stack[--reach->stack_count]];
        uintptr_t start = (block->start + WORD - 1) & ~(uintptr_t)(WORD - 1);
        for (const uint64_t *word = (const uint64_t *)start;
             (uintptr_t)(word + 1) <= block->start + block->size; word++) {
            uint64_t value = *word;
            if (value - reach->low >= reach->high - reach->low)
                continue;
            ptrdiff_t found = find_block(reach, value);
            if (found < 0 || (size_t)found == leader || reach->blocks[found].state != REACH_UNREACHED)
                continue;
            const struct reach_block *reached = &reach->blocks[found];
            if (reach->glibc_chunks && value % 16 == 0 && value != reached->start &&
                value + WORD >= reached->start + reached->size)
                continue;
            reach->blocks[found].state = REACH_INDIRECT;
            push(reach, (size_t)found);
        }
    }
}

void reach_finish(struct reach *reach)
{
    for (size_t i = 0; i < reach->count; i++)
        if (reach->blocks[i].state == REACH_UNREACHED)
            clique(reach, i);
}

void reach_release(struct reach *reach)
{
    if (reach->blocks)
        region_unmap(reach->blocks, reach->room);
    if (reach->regions)
        region_unmap(reach->regions, reach->regions_room);
    if (reach->pages)
        region_unmap(reach->pages, reach->pages_room);
    if (reach->stack)
        region_unmap(reach->stack, reach->stack_room);
    memset(reach, 0, sizeof *reach);
}
