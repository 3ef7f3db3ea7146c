/* Reachability of the live blocks from roots, as memcheck's leak check
 * decides it (mc_leakcheck.c): a flood through the blocks' words from the
 * roots', then the lost blocks' cliques.  Knows nothing of where blocks
 * and roots come from (leak_scan.c). */
#ifndef MPROF_REACH_H
#define MPROF_REACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memory_map.h"

enum reach_state {
    REACH_UNREACHED, /* at the end: definitely lost, a clique's leader */
    REACH_INDIRECT,  /* reached only from lost blocks */
    REACH_POSSIBLE,  /* reached only through interior pointers, or from possibly lost blocks */
    REACH_REACHABLE,
};

/* 16 bytes a block, and a byte of state apart: ten million blocks must fit
 * beside the program in its address space. */
struct reach_block {
    uintptr_t start;
    uint64_t packed; /* size, then whether headed, then the record (reach_size, reach_record) */
};
#define REACH_RECORD_BITS 24
#define REACH_SIZE_LIMIT ((UINT64_C(1) << (63 - REACH_RECORD_BITS)) - 1)
/* A block with a header (header.h): while reach runs, its state is kept in
 * its header's record field, beside the words the scan reads anyway, with
 * check bits of its address, so that a word that points at a block's start
 * is followed without a lookup; reach_finish puts the records back. */
#define REACH_HEADED (UINT64_C(1) << REACH_RECORD_BITS)

static inline uint64_t reach_size(const struct reach_block *block)
{
    return block->packed >> (REACH_RECORD_BITS + 1);
}

/* The block's record, BACKING_RECORD (paths.h) for one that fits none. */
static inline uint32_t reach_record(const struct reach_block *block)
{
    return (uint32_t)(block->packed & (REACH_HEADED - 1));
}

/* A word to follow, waiting while its block's first line is fetched. */
struct reach_pending {
    uint64_t value;
    uint32_t from;
};
#define REACH_RING 32u

/* Blocks that lie close together share an index of their pages. */
struct reach_region {
    uintptr_t low, high; /* from the first block's start to the furthest end */
    size_t first;        /* its first block */
    uint32_t *pages;     /* per page from low, and one more: its blocks' count before that page */
    size_t page_count;
    bool mapped; /* wholly in one readable mapping: any word of it may be read */
};

struct reach {
    struct reach_block *blocks; /* sorted by start once prepared */
    size_t count, room;
    uint8_t *states; /* enum reach_state of each block, but a headed one's during the scan */
    size_t states_room;
    /* Blocks that hold others (a block whose memory a pool hands out as
     * objects, not declared its backing): out of the scan, as memcheck
     * leaves such a block out of its leak check, and still reachable, in
     * use by the program's allocator. */
    struct reach_block *outer;
    size_t outer_count, outer_room;
    struct reach_region *regions;
    size_t region_count, regions_room;
    uint32_t *pages;
    size_t pages_room;
    uintptr_t low, high; /* of every region */
    uint64_t *stack; /* blocks to scan: a headed one's start | 1, another's index << 1 */
    size_t stack_count, stack_room;
    struct reach_pending ring[REACH_RING];
    unsigned ring_head, ring_count;
    /* Headed blocks' states are in their headers, from reach_add_headed to
     * reach_finish: every other thread is stopped, and this one's signals
     * blocked, so that no free reads a header meanwhile. */
    bool headers_in_use;
    const struct memory_map *map; /* which memory is a file's: a vtable's */
    /* The blocks are glibc's: the next chunk's header lies in a block's last
     * 8 bytes where the block uses the next chunk's first word, and glibc's
     * bins and top (in libc's data, a root) point there. */
    bool glibc_chunks;
    uint64_t root_bytes, block_bytes;
    bool out_of_memory;
};

/* A block to classify (a block_visitor's arguments). */
void reach_add(void *reach, uintptr_t start, uint64_t size, uint32_t record);
/* The same for a block with a header, found by heap_walk: with
 * reach->headers_in_use set, its state goes into its header. */
void reach_add_headed(void *reach, uintptr_t start, uint64_t size, uint32_t record);
/* Sorts and indexes the blocks; false when out of memory (every header
 * as it was).  Overlapping blocks (a pool's objects in a block that was
 * not declared its backing) keep the inner ones. */
bool reach_prepare(struct reach *reach, const struct memory_map *map);
/* The first block that starts in [start, end): its start and end; false
 * when there is none. */
bool reach_next_block(const struct reach *reach, uintptr_t start, uintptr_t end, uintptr_t *block_start,
                      uintptr_t *block_end);
/* A root: its words, and the blocks they reach. */
void reach_scan_root(struct reach *reach, uintptr_t start, uintptr_t end);
void reach_root_words(struct reach *reach, const uint64_t *words, size_t count);
/* The blocks not reached: leaders and the indirectly lost; then every
 * block's state is in blocks, and every header as it was. */
void reach_finish(struct reach *reach);
void reach_release(struct reach *reach);

#endif
