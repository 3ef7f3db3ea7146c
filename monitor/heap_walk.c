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
 * past the end, or too small), the walk goes on at the next headed chunk
 * after it, 16 bytes at a time. */
static uint64_t walk_chunks(uintptr_t start, uintptr_t end, block_visitor *visit, void *context)
{
    uint64_t resyncs = 0;
    uintptr_t chunk = start;
    while (chunk + CHUNK_MIN <= end) {
        uint64_t size = chunk_size(chunk);
        if (size >= CHUNK_MIN && size <= end - chunk && size % 16 == 0) {
            if (headed(chunk, size, end, CHUNK_MIN))
                visit_chunk(chunk, visit, context);
            chunk += size;
            continue;
        }
        resyncs++;
        for (chunk += 16; chunk + CHUNK_MIN <= end; chunk += 16)
            if (headed(chunk, chunk_size(chunk), end, CHUNK_MIN))
                break;
    }
    return resyncs;
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

/* Large blocks, each a mapping of its own, which the kernel may have
 * merged with its neighbours into one. */
static void walk_mapped_chunks(uintptr_t start, uintptr_t end, block_visitor *visit, void *context)
{
    for (uintptr_t chunk = start; chunk + CHUNK_MIN <= end;) {
        uint64_t word = *(const uint64_t *)(chunk + 8);
        uint64_t size = word & ~(uint64_t)SIZE_BITS;
        if (*(const uint64_t *)chunk != 0 || !(word & IS_MMAPPED) || size % PAGE || size < PAGE ||
            size > end - chunk)
            return;
        if (headed(chunk, size, end, PAGE + 16))
            visit_chunk(chunk, visit, context);
        chunk += size;
    }
}

uint64_t heap_walk(const struct memory_map *map, block_visitor *visit, void *context)
{
    uint64_t resyncs = 0;
    uintptr_t brk_end = (uintptr_t)syscall(SYS_brk, 0);
    for (size_t i = 0; i < map->count; i++) {
        const struct mapping *mapping = &map->mappings[i];
        if (!mapping->readable || !mapping->writable || mapping->file)
            continue;
        if (mapping->heap) {
            uintptr_t end = brk_end > mapping->start && brk_end <= mapping->end ? brk_end : mapping->end;
            resyncs += walk_chunks((mapping->start + 15) & ~(uintptr_t)15, end, visit, context);
            continue;
        }
        uintptr_t heap_end;
        uintptr_t first;
        if (mapping->start % HEAP_MAX == 0 && mapping->end - mapping->start >= PAGE &&
            (first = arena_heap_chunks(mapping->start, mapping->end, &heap_end))) {
            resyncs += walk_chunks(first, heap_end, visit, context);
            continue;
        }
        walk_mapped_chunks(mapping->start, mapping->end, visit, context);
    }
    return resyncs;
}
