/* The flood of memcheck's leak check over an index of sorted blocks.
 * A word reaches a block when it points into it (its start, or one of its
 * bytes; a block of size 0 only at its start).  From a root or a reachable
 * block a pointer to the start, or one memcheck's heuristics accept
 * inside it, makes the block reachable; any other pointer to it, or any
 * pointer from a possibly lost block, makes it possibly lost.  A block
 * whose state rises is scanned (again).  Then each block still unreached,
 * in address order, leads a clique: the unreached blocks it reaches are
 * indirectly lost, earlier leaders among them too.
 *
 * The cost is in cache misses: a word that points into the heap leads to
 * a block anywhere.  So a pointer to a headed block's start is followed
 * through the header alone (REACH_HEADED), and the words to follow wait in
 * a ring while their blocks' first lines are fetched. */
#include "reach.h"

#include <stddef.h>
#include <string.h>

#include "scan_memory.h"
#include "hash.h"
#include "header.h"
#include "radix.h"

#define PAGE_BITS 12
#define PAGE_SIZE (1u << PAGE_BITS)
/* Blocks further apart start a new region of the index. */
#define REGION_GAP (1u << 20)
#define WORD 8u
#define STATE_MASK 0x7fu
/* The check bits a headed block's record field holds during the scan. */
#define CHECK_SHIFT 8
#define CACHE_LINE 64u
/* How much of a block pushed is asked for ahead of its scan. */
#define PUSH_PREFETCH_BYTES 256u

static uint32_t check_bits(uintptr_t start)
{
    return (uint32_t)(mix64(start) >> 40) << CHECK_SHIFT;
}

/* The record a headed block's header held before the scan. */
static void restore_header(struct reach_block *block)
{
    uint32_t record = reach_record(block);
    header_of((void *)block->start)->record = record == REACH_HEADED - 1 ? BLOCK_HEADER_UNTRACKED : record;
    block->packed &= ~REACH_HEADED;
}

static bool grow(void **array, size_t *room, size_t needed, size_t entry)
{
    if (needed * entry <= *room)
        return true;
    size_t bytes = *room ? *room : 64 * 1024;
    while (bytes < needed * entry)
        bytes *= 2;
    void *grown = *array ? scan_grow(*array, *room, bytes) : scan_map(bytes);
    if (!grown)
        return false;
    *array = grown;
    *room = bytes;
    return true;
}

static void add(struct reach *reach, uintptr_t start, uint64_t size, uint32_t record, uint64_t headed)
{
    if (reach->out_of_memory ||
        !grow((void **)&reach->blocks, &reach->room, reach->count + 1, sizeof(struct reach_block))) {
        reach->out_of_memory = true;
        return;
    }
    if (size > REACH_SIZE_LIMIT)
        size = REACH_SIZE_LIMIT;
    if (record > REACH_HEADED - 1)
        record = REACH_HEADED - 1;
    reach->blocks[reach->count++] = (struct reach_block){start, size << (REACH_RECORD_BITS + 1) | headed | record};
    /* Its state goes into its header now, while the walk has it at hand. */
    if (headed)
        header_of((void *)start)->record = check_bits(start) | REACH_UNREACHED;
}

void reach_add(void *context, uintptr_t start, uint64_t size, uint32_t record)
{
    add(context, start, size, record, 0);
}

void reach_add_headed(void *context, uintptr_t start, uint64_t size, uint32_t record)
{
    struct reach *reach = context;
    add(reach, start, size, record, reach->headers_in_use ? REACH_HEADED : 0);
}

_Static_assert(sizeof(struct reach_block) == sizeof(struct keyed_pair) &&
                   offsetof(struct reach_block, start) == offsetof(struct keyed_pair, key),
               "blocks sort as pairs keyed by their start (the monitor builds with -fno-strict-aliasing)");

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
    struct reach_block *spare = scan_map(bytes);
    if (!spare)
        return false;
    void *result = radix_sort_pairs((struct keyed_pair *)reach->blocks, (struct keyed_pair *)spare, reach->count);
    if (result == spare)
        memcpy(reach->blocks, spare, bytes);
    scan_unmap(spare, bytes);
    return true;
}

static uintptr_t block_end(const struct reach_block *block)
{
    uint64_t size = reach_size(block);
    return block->start + (size ? size : 1);
}

/* Drops duplicates, and puts blocks that hold the next one (the outer of
 * two nested) apart, so that no two overlap.  A headed block dropped gets
 * its header back, but where the one kept is the same block, headed. */
static void drop_overlaps(struct reach *reach)
{
    size_t kept = 0;
    for (size_t i = 0; i < reach->count; i++) {
        const struct reach_block *block = &reach->blocks[i];
        while (kept && block_end(&reach->blocks[kept - 1]) > block->start) {
            struct reach_block *dropped = &reach->blocks[kept - 1];
            if ((dropped->packed & REACH_HEADED) &&
                (dropped->start != block->start || !(block->packed & REACH_HEADED)))
                restore_header(dropped);
            if (dropped->start != block->start &&
                grow((void **)&reach->outer, &reach->outer_room, reach->outer_count + 1, sizeof *dropped))
                reach->outer[reach->outer_count++] = *dropped;
            kept--;
        }
        reach->blocks[kept++] = *block;
    }
    reach->count = kept;
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
        reach->regions[reach->region_count++] = (struct reach_region){block->start, block_end(block), i, NULL, 0, false};
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
    for (size_t r = 0; r < reach->region_count; r++) {
        struct reach_region *region = &reach->regions[r];
        const struct mapping *mapping = reach->map ? memory_map_find(reach->map, region->low - BLOCK_HEADER_SIZE) : NULL;
        region->mapped = mapping && mapping->readable && mapping->end >= region->high;
    }
    return true;
}

/* Every header back as it was, the scan given up. */
static bool give_up(struct reach *reach)
{
    for (size_t i = 0; i < reach->count; i++)
        if (reach->blocks[i].packed & REACH_HEADED)
            restore_header(&reach->blocks[i]);
    reach->out_of_memory = true;
    return false;
}

bool reach_prepare(struct reach *reach, const struct memory_map *map)
{
    reach->map = map;
    if (reach->out_of_memory || !sort(reach))
        return give_up(reach);

    /* A block found twice (in the map and by the walk) is one. */
    drop_overlaps(reach);
    if (!grow((void **)&reach->stack, &reach->stack_room, 4096, sizeof(uint64_t)) ||
        !grow((void **)&reach->states, &reach->states_room, reach->count + 1, 1) || !index_blocks(reach))
        return give_up(reach);
    memset(reach->states, REACH_UNREACHED, reach->count);
    return true;
}

/* The region that holds address, or NULL. */
static const struct reach_region *find_region(const struct reach *reach, uintptr_t address)
{
    size_t low = 0, high = reach->region_count;
    while (low < high) { /* the last region starting at or before address */
        size_t middle = low + (high - low) / 2;
        if (reach->regions[middle].low <= address)
            low = middle + 1;
        else
            high = middle;
    }
    if (!low || address >= reach->regions[low - 1].high)
        return NULL;
    return &reach->regions[low - 1];
}

/* The block that holds address, or -1. */
static ptrdiff_t find_block(const struct reach *reach, const struct reach_region *region, uintptr_t address)
{
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

bool reach_next_block(const struct reach *reach, uintptr_t start, uintptr_t end, uintptr_t *block_start,
                      uintptr_t *block_end_out)
{
    size_t low = 0, high = reach->count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (reach->blocks[middle].start < start)
            low = middle + 1;
        else
            high = middle;
    }
    if (low == reach->count || reach->blocks[low].start >= end)
        return false;
    *block_start = reach->blocks[low].start;
    *block_end_out = block_end(&reach->blocks[low]);
    return true;
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
static bool heuristic_reach(const struct reach *reach, uintptr_t start, uint64_t size, uintptr_t pointer)
{
    const uint64_t *words = (const uint64_t *)start;
    uint64_t offset = pointer - start;
    /* stdstring: length, capacity, refcount before the characters, the
     * block exactly long enough for capacity and the NUL. */
    if (offset == 3 * WORD && size >= 3 * WORD && 3 * WORD + words[1] + 1 == size && words[0] <= words[1])
        return true;
    /* newarray: the element count before a new[] array of objects with a
     * destructor.  It takes in length64 too (the length of the rest before
     * it, as sqlite3 keeps it), a count of one element as long as the rest,
     * as memcheck says of the two on 64-bit machines. */
    if (offset == WORD && size >= WORD && words[0] > 0 && (size - WORD) % words[0] == 0)
        return true;
    /* multipleinheritance: a second base's vtable pointer inside the
     * object, the first base's at its start. */
    if (pointer % WORD == 0 && offset + WORD <= size && size >= WORD &&
        vtable_address(reach, *(const uint64_t *)pointer) && vtable_address(reach, words[0]))
        return true;
    return false;
}

/* Whether value, inside block, is the address of the chunk after it in
 * glibc's heap, which starts in the block's last word where the block uses
 * it: glibc's own pointers (its bins, its top), no program's. */
static inline bool next_chunk(const struct reach *reach, const struct reach_block *block, uint64_t value)
{
    return reach->glibc_chunks && value % 16 == 0 && value != block->start &&
           value + WORD >= block->start + reach_size(block);
}

/* A block's state, wherever it is kept. */
static inline uint32_t state_of(const struct reach *reach, size_t index)
{
    const struct reach_block *block = &reach->blocks[index];
    if (block->packed & REACH_HEADED)
        return header_of((void *)block->start)->record & STATE_MASK;
    return reach->states[index];
}

static inline void set_state(struct reach *reach, size_t index, uint32_t state)
{
    const struct reach_block *block = &reach->blocks[index];
    if (block->packed & REACH_HEADED)
        header_of((void *)block->start)->record = check_bits(block->start) | state;
    else
        reach->states[index] = (uint8_t)state;
}

/* Out of memory for the stack, a block is left unscanned: what it points
 * to may be called lost, and the scan says it failed. */
static inline void push(struct reach *reach, uint64_t entry)
{
    if (reach->stack_count + 1 > reach->stack_room / sizeof(uint64_t) &&
        !grow((void **)&reach->stack, &reach->stack_room, reach->stack_count + 1, sizeof(uint64_t))) {
        reach->out_of_memory = true;
        return;
    }
    reach->stack[reach->stack_count++] = entry;
}

/* The header of the headed block that starts at value, or NULL: read where
 * it is mapped (the region is, or a block starts in the same page, past
 * its first 16 bytes); a header whose check bits are not value's is none. */
static inline struct block_header *headed_start(const struct reach *reach, const struct reach_region *region,
                                                uintptr_t value)
{
    if (!reach->headers_in_use || value % 16)
        return NULL;
    if (!region->mapped) {
        size_t page = (value - region->low) >> PAGE_BITS;
        if (value % PAGE_SIZE < BLOCK_HEADER_SIZE || region->pages[page] == region->pages[page + 1])
            return NULL;
    }
    struct block_header *header = header_of((void *)value);
    if (header->tag != BLOCK_HEADER_TAG || (header->record & ~STATE_MASK) != check_bits(value))
        return NULL;
    return header;
}

/* Raises the state of what value points into, from a block or root in
 * state from. */
static void follow(struct reach *reach, uint64_t value, uint32_t from)
{
    const struct reach_region *region = find_region(reach, value);
    if (!region)
        return;
    struct block_header *header = headed_start(reach, region, value);
    if (header) {
        uint32_t state = header->record & STATE_MASK;
        uint32_t raised = from == REACH_REACHABLE ? REACH_REACHABLE : REACH_POSSIBLE;
        if (state < raised) {
            header->record = check_bits(value) | raised;
            push(reach, value | 1);
            /* Scanned soon, from the stack's top: its other lines. */
            uintptr_t line = (value - BLOCK_HEADER_SIZE + CACHE_LINE) & ~(uintptr_t)(CACHE_LINE - 1);
            uintptr_t end = value + (header->size < PUSH_PREFETCH_BYTES ? header->size : PUSH_PREFETCH_BYTES);
            for (; line < end; line += CACHE_LINE)
                __builtin_prefetch((const void *)line);
        }
        return;
    }
    ptrdiff_t found = find_block(reach, region, value);
    if (found < 0)
        return;
    const struct reach_block *block = &reach->blocks[found];
    uint32_t state = state_of(reach, (size_t)found);
    if (state == REACH_REACHABLE)
        return;
    uint64_t size = reach_size(block);
    if (next_chunk(reach, block, value))
        return;
    uint64_t entry = block->packed & REACH_HEADED ? block->start | 1 : (uint64_t)found << 1;
    if (from == REACH_REACHABLE && (value == block->start || heuristic_reach(reach, block->start, size, value))) {
        set_state(reach, (size_t)found, REACH_REACHABLE);
        push(reach, entry);
    } else if (state == REACH_UNREACHED) {
        set_state(reach, (size_t)found, REACH_POSSIBLE);
        push(reach, entry);
    }
}

/* value waits in the ring while the line it points to is fetched; the
 * oldest waiting is followed. */
static inline void reach_word(struct reach *reach, uint64_t value, uint32_t from)
{
    if (value - reach->low >= reach->high - reach->low)
        return;
    __builtin_prefetch((const void *)(value - BLOCK_HEADER_SIZE));
    if (reach->ring_count < REACH_RING) {
        reach->ring[(reach->ring_head + reach->ring_count++) % REACH_RING] = (struct reach_pending){value, from};
        return;
    }
    struct reach_pending oldest = reach->ring[reach->ring_head];
    reach->ring[reach->ring_head] = (struct reach_pending){value, from};
    reach->ring_head = (reach->ring_head + 1) % REACH_RING;
    follow(reach, oldest.value, oldest.from);
}

static void drain_ring(struct reach *reach)
{
    while (reach->ring_count) {
        struct reach_pending oldest = reach->ring[reach->ring_head];
        reach->ring_head = (reach->ring_head + 1) % REACH_RING;
        reach->ring_count--;
        follow(reach, oldest.value, oldest.from);
    }
}

static void scan_words(struct reach *reach, uintptr_t start, uintptr_t end, uint32_t from)
{
    start = (start + WORD - 1) & ~(uintptr_t)(WORD - 1);
    for (const uint64_t *word = (const uint64_t *)start; (uintptr_t)(word + 1) <= end; word++)
        reach_word(reach, *word, from);
}

/* The start, size and state of a stack entry's block. */
static void popped(const struct reach *reach, uint64_t entry, uintptr_t *start, uint64_t *size, uint32_t *state)
{
    if (entry & 1) {
        *start = entry & ~(uint64_t)1;
        const struct block_header *header = header_of((void *)*start);
        *size = header->size;
        *state = header->record & STATE_MASK;
    } else {
        const struct reach_block *block = &reach->blocks[entry >> 1];
        *start = block->start;
        *size = reach_size(block);
        *state = state_of(reach, entry >> 1);
    }
}

static void flood(struct reach *reach)
{
    for (;;) {
        while (reach->stack_count) {
            uintptr_t start;
            uint64_t size;
            uint32_t state;
            popped(reach, reach->stack[--reach->stack_count], &start, &size, &state);
            reach->block_bytes += size;
            scan_words(reach, start, start + size, state);
        }
        if (!reach->ring_count)
            return;
        drain_ring(reach);
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

/* The clique of leader: every unreached block it reaches, but itself.
 * The leader's header is back: it is never found by its header. */
static void clique(struct reach *reach, size_t leader)
{
    push(reach, (uint64_t)leader << 1);
    while (reach->stack_count) {
        uintptr_t block_start;
        uint64_t block_size;
        uint32_t block_state;
        popped(reach, reach->stack[--reach->stack_count], &block_start, &block_size, &block_state);
        uintptr_t start = (block_start + WORD - 1) & ~(uintptr_t)(WORD - 1);
        for (const uint64_t *word = (const uint64_t *)start; (uintptr_t)(word + 1) <= block_start + block_size;
             word++) {
            uint64_t value = *word;
            if (value - reach->low >= reach->high - reach->low)
                continue;
            const struct reach_region *region = find_region(reach, value);
            if (!region)
                continue;
            struct block_header *header = headed_start(reach, region, value);
            if (header) {
                if ((header->record & STATE_MASK) == REACH_UNREACHED) {
                    header->record = check_bits(value) | REACH_INDIRECT;
                    push(reach, value | 1);
                }
                continue;
            }
            ptrdiff_t found = find_block(reach, region, value);
            if (found < 0 || (size_t)found == leader)
                continue;
            const struct reach_block *reached = &reach->blocks[found];
            if (state_of(reach, (size_t)found) != REACH_UNREACHED)
                continue;
            if (next_chunk(reach, reached, value))
                continue;
            set_state(reach, (size_t)found, REACH_INDIRECT);
            push(reach, (uint64_t)found << 1);
        }
    }
}

void reach_finish(struct reach *reach)
{
    /* One pass: each block in turn gets its header back, its state moving
     * to states, and leads a clique if still unreached.  A clique finds the
     * blocks after it by their headers, those before by lookup. */
    for (size_t i = 0; i < reach->count; i++) {
        struct reach_block *block = &reach->blocks[i];
        if (block->packed & REACH_HEADED) {
            reach->states[i] = (uint8_t)state_of(reach, i);
            restore_header(block);
        }
        if (reach->states[i] == REACH_UNREACHED)
            clique(reach, i);
    }
    reach->headers_in_use = false;
}

void reach_release(struct reach *reach)
{
    if (reach->blocks)
        scan_unmap(reach->blocks, reach->room);
    if (reach->regions)
        scan_unmap(reach->regions, reach->regions_room);
    if (reach->pages)
        scan_unmap(reach->pages, reach->pages_room);
    if (reach->stack)
        scan_unmap(reach->stack, reach->stack_room);
    if (reach->states)
        scan_unmap(reach->states, reach->states_room);
    if (reach->outer)
        scan_unmap(reach->outer, reach->outer_room);
    memset(reach, 0, sizeof *reach);
}
