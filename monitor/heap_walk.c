/* glibc's heaps as they lie in memory (malloc/malloc.c, arena.c), for the
 * leak scan:
 * - a chunk is a size word (bit 0: the previous chunk is in use, bit 1:
 *   mapped on its own, bit 2: not the main arena's) after the previous
 *   chunk's last word; the memory it gives out starts 16 bytes in;
 * - the main arena's chunks run from the start of [heap] to the break;
 * - another arena's heaps are mappings aligned to 64 MiB whose first words
 *   are a heap_info {arena, previous heap, size, ...}; the first heap of an
 *   arena holds the arena's state after it; the chunks run from there to
 *   the heap's size;
 * - a large block is a mapping of its own (bit 1), a chunk from its start.
 * A chunk freed into a fastbin or a tcache still looks in use: a headed
 * chunk is live only while it keeps its header's tag, which every free
 * clears (header_released), and which a tcache's key overwrites. */
#include "heap_walk.h"

#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "header.h"
#include "paths.h"

#define CHUNK_HEADER 16u
#define CHUNK_MIN 32u
#define SIZE_BITS 7u
#define IS_MMAPPED 2u
#define HEAP_MAX (64u << 20)
#define PAGE 4096u
/* How far ahead of the chunk in hand the walk asks for memory. */
#define WALK_AHEAD 4096u

static uint64_t chunk_size(uintptr_t chunk)
{
    return *(const uint64_t *)(chunk + 8) & ~(uint64_t)SIZE_BITS;
}

/* glibc's request2size: the chunk a request of size bytes needs. */
static uint64_t request_chunk(uint64_t size)
{
    uint64_t chunk = (size + 8 + 15) & ~(uint64_t)15;
    return chunk < CHUNK_MIN ? CHUNK_MIN : chunk;
}

/* Whether chunk, of size bytes, ending at or before end, holds a live block
 * with a header; slack: how much larger than asked a chunk can be. */
static bool headed(uintptr_t chunk, uint64_t size, uintptr_t end, uint64_t slack)
{
    if (size < CHUNK_MIN || size > end - chunk)
        return false;
    const struct block_header *header = (const struct block_header *)(chunk + CHUNK_HEADER);
    if (header->tag != BLOCK_HEADER_TAG || !header_fits(header->size))
        return false;
    if (header->record != BLOCK_HEADER_UNTRACKED && header->record > BACKING_RECORD)
        return false;
    uint64_t needed = request_chunk(header->size + BLOCK_HEADER_SIZE);
    return size >= needed && size - needed < slack;
}

static void visit_chunk(uintptr_t chunk, block_visitor *visit, void *context)
{
    const struct block_header *header = (const struct block_header *)(chunk + CHUNK_HEADER);
    visit(context, chunk + CHUNK_HEADER + BLOCK_HEADER_SIZE, header->size, header->record);
}

/* The chunks from start to end.  Where the chain breaks (a size that runs
 * past the end, or too small: a chunk a stopped thread was splitting or
 * merging), the walk goes on at the next headed chunk after it, 16 bytes
 * at a time.  *last: the last chunk, when the chain held to the end. */
static void walk_chunks(uintptr_t start, uintptr_t end, block_visitor *visit, void *context, uintptr_t *last)
{
    uintptr_t chunk = start;
    *last = 0;
    while (chunk + CHUNK_MIN <= end) {
        /* Each size read waits on the last: the lines ahead are asked for
         * before they are needed. */
        __builtin_prefetch((const void *)(chunk + WALK_AHEAD));
        uint64_t size = chunk_size(chunk);
        if (size >= CHUNK_MIN && size <= end - chunk && size % 16 == 0) {
            if (headed(chunk, size, end, CHUNK_MIN))
                visit_chunk(chunk, visit, context);
            *last = chunk;
            chunk += size;
            continue;
        }
        *last = 0;
        for (chunk += 16; chunk + CHUNK_MIN <= end; chunk += 16)
            if (headed(chunk, chunk_size(chunk), end, CHUNK_MIN))
                break;
    }
}

/* Another arena's heap at start: its chunks begin after the heap_info (and
 * the arena's state, in an arena's first heap), where a chain of sizes
 * begins that ends exactly at the heap's size.  0 when it is none. */
static uintptr_t arena_heap_chunks(uintptr_t start, uintptr_t readable_end, uintptr_t *end)
{
    const uint64_t *info = (const uint64_t *)start;
    uint64_t size = info[2];
    if (size < PAGE || size > HEAP_MAX || start + size > readable_end)
        return 0;
    *end = start + size;
    for (uintptr_t first = start + 32; first < start + PAGE && first + CHUNK_MIN <= *end; first += 16) {
        uintptr_t chunk = first;
        unsigned steps = 0;
        while (chunk < *end && steps < 64) {
            uint64_t chunk_bytes = chunk_size(chunk);
            if (chunk_bytes < CHUNK_MIN || chunk_bytes > *end - chunk || chunk_bytes % 16)
                break;
            chunk += chunk_bytes;
            steps++;
        }
        /* A long chain that holds is taken as the start: the rest of it is
         * walked, and checked, chunk by chunk. */
        if (chunk == *end || steps == 64)
            return first;
    }
    return 0;
}

/* Large blocks, each a mapping of its own, page aligned, which the kernel
 * may list with its neighbours as one: the program's regions, a thread's
 * stack, another block's mapping, above or below.  So each page not in a
 * chunk is looked at for one.  Whether there was one. */
static bool walk_mapped_chunks(uintptr_t start, uintptr_t end, block_visitor *visit, void *context)
{
    bool found = false;
    for (uintptr_t chunk = start; chunk + CHUNK_MIN <= end;) {
        uint64_t word = *(const uint64_t *)(chunk + 8);
        uint64_t size = word & ~(uint64_t)SIZE_BITS;
        if (*(const uint64_t *)chunk == 0 && (word & IS_MMAPPED) && size % PAGE == 0 && size >= PAGE &&
            size <= end - chunk && headed(chunk, size, end, PAGE + 16)) {
            visit_chunk(chunk, visit, context);
            found = true;
            chunk += size;
        } else {
            chunk += PAGE;
        }
    }
    return found;
}

void heap_walk(struct memory_map *map, block_visitor *visit, void *context, uintptr_t *main_top)
{
    uintptr_t last;
    *main_top = 0;
    uintptr_t brk_end = (uintptr_t)syscall(SYS_brk, 0);
    for (size_t i = 0; i < map->count; i++) {
        struct mapping *mapping = &map->mappings[i];
        if (!mapping->readable || !mapping->writable || mapping->file || mapping->own)
            continue;
        if (mapping->heap) {
            uintptr_t end = brk_end > mapping->start && brk_end <= mapping->end ? brk_end : mapping->end;
            walk_chunks((mapping->start + 15) & ~(uintptr_t)15, end, visit, context, &last);
            *main_top = last;
            continue;
        }
        uintptr_t heap_end;
        uintptr_t first;
        if (mapping->start % HEAP_MAX == 0 && mapping->end - mapping->start >= PAGE &&
            (first = arena_heap_chunks(mapping->start, mapping->end, &heap_end))) {
            walk_chunks(first, heap_end, visit, context, &last);
            mapping->heap = true;
            continue;
        }
        mapping->chunks = walk_mapped_chunks(mapping->start, mapping->end, visit, context);
    }
}

/* struct malloc_state (malloc/malloc.c, glibc 2.26 on): a mutex, flags,
 * have_fastchunks, ten fastbins, top, last_remainder, 254 bin words,
 * a binmap of four words, next, next_free, attached_threads, system_mem,
 * max_system_mem. */
#define ARENA_TOP 96u
#define ARENA_BINS 112u
#define ARENA_BIN_WORDS 254u
#define ARENA_SIZE (ARENA_BINS + 8u * ARENA_BIN_WORDS + 16u + 5u * 8u)
/* Of the bins a program has not used, this many must point at themselves. */
#define ARENA_EMPTY_BINS_MIN 32u

uintptr_t heap_main_arena(uintptr_t start, uintptr_t end, uintptr_t top, size_t *size)
{
    *size = 0;
    if (!top)
        return 0;
    for (uintptr_t word = (start + 7) & ~(uintptr_t)7; word + 8 <= end; word += 8) {
        if (*(const uint64_t *)word != top || word < start + ARENA_TOP || word - ARENA_TOP + ARENA_SIZE > end)
            continue;
        uintptr_t arena = word - ARENA_TOP;
        unsigned empty = 0;
        /* An empty bin's two words both point 16 bytes before the first,
         * where a chunk's would start. */
        for (unsigned bin = 0; bin + 1 < ARENA_BIN_WORDS; bin += 2) {
            uintptr_t at = arena + ARENA_BINS + 8 * bin;
            empty += *(const uint64_t *)at == at - 16 && *(const uint64_t *)(at + 8) == at - 16;
        }
        if (empty >= ARENA_EMPTY_BINS_MIN) {
            *size = ARENA_SIZE;
            return arena;
        }
    }
    return 0;
}
