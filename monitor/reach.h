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

struct reach_block {
    uintptr_t start;
    uint64_t size;
    uint32_t record;
    uint32_t state;
};

/* Blocks that lie close together share an index of their pages. */
struct reach_region {
    uintptr_t low, high; /* from the first block's start to the furthest end */
    size_t first;        /* its first block */
    uint32_t *pages;     /* per page from low, and one more: its blocks' count before that page */
    size_t page_count;
};

struct reach {
    struct reach_block *blocks; /* sorted by start once prepared */
    size_t count, room;
    struct reach_region *regions;
    size_t region_count, regions_room;
    uint32_t *pages;
    size_t pages_room;
    uintptr_t low, high; /* of every region */
    uint32_t *stack; /* blocks to scan */
    size_t stack_count, stack_room;
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
/* Sorts and indexes the blocks; false when out of memory.  Overlapping
 * blocks (a pool's objects in a block that was not declared its backing)
 * keep the inner ones. */
bool reach_prepare(struct reach *reach, const struct memory_map *map);
/* Whether a block starts in [start, end). */
bool reach_holds_block(const struct reach *reach, uintptr_t start, uintptr_t end);
/* A root: its words, and the blocks they reach. */
void reach_scan_root(struct reach *reach, uintptr_t start, uintptr_t end);
void reach_root_words(struct reach *reach, const uint64_t *words, size_t count);
/* The blocks not reached: leaders and the indirectly lost. */
void reach_finish(struct reach *reach);
void reach_release(struct reach *reach);

#endif
