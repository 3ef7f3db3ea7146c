/* Block headers: what the free of a block needs, kept in 16 bytes just
 * before the block, as the paper's mprof kept it (section 3.1), instead of
 * in the pointer map (block_map.h).
 *
 * The allocator's own work on a block has just brought these bytes into
 * the cache, and no other thread's block shares them: an allocation and a
 * free cost no cache miss and no shared write for the monitor's sake.
 *
 * Only with glibc's allocator (monitor.block_headers, chosen at start-up):
 * the word before every glibc block is its chunk's size, a multiple of 16
 * plus three flag bits, so bit 3 is never set in it, while a header's tag
 * always sets it.  A block the monitor never returned (from before it
 * started, from its own libraries, from a signal handler that interrupted
 * it, from the memalign family, which keeps using the map so that an
 * alignment is not paid for in header bytes) is thereby told apart
 * exactly, without looking anything up. */
#ifndef MPROF_HEADER_H
#define MPROF_HEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "state.h"

#define BLOCK_HEADER_SIZE 16u
/* Bit 3 set: never the low half of a glibc chunk's size word. */
#define BLOCK_HEADER_TAG UINT32_C(0x6d70726b)
/* The path of a block the monitor could not count (out of memory): its
 * free is an unknown one, as an untracked block's is in the map. */
#define BLOCK_HEADER_UNTRACKED UINT32_MAX

_Static_assert(BLOCK_HEADER_TAG & 8, "the tag must set the bit glibc's size words never set");

struct block_header {
    uint64_t size;   /* what the program asked for */
    uint32_t tag;    /* where glibc's size word would be, low half first */
    uint32_t record; /* the block's path, or BLOCK_HEADER_UNTRACKED */
};
_Static_assert(sizeof(struct block_header) == BLOCK_HEADER_SIZE, "a header keeps glibc's 16-byte alignment");

static inline struct block_header *header_of(void *block)
{
    return (struct block_header *)block - 1;
}

static inline void *header_base(void *block)
{
    return (char *)block - BLOCK_HEADER_SIZE;
}

/* Whether block (not NULL, not from the early pool) carries a header. */
static inline bool has_header(void *block)
{
    return monitor.block_headers && header_of(block)->tag == BLOCK_HEADER_TAG;
}

/* The base to hand the real free of block, which has a header: its tag
 * cleared first.  A chunk glibc merges into a free neighbour keeps its
 * bytes, header and all, inside the larger one, and the leak scan's walk
 * (heap_walk.h), which finds its way again by the tags where a chain of
 * chunks breaks (a thread stopped while it splits one), must not take a
 * freed block for live. */
static inline void *header_released(void *block)
{
    header_of(block)->tag = 0;
    return header_base(block);
}

/* The block the program sees in base, a block of the real allocator with
 * room for a header (NULL stays NULL). */
static inline void *header_block(void *base)
{
    return base ? (char *)base + BLOCK_HEADER_SIZE : NULL;
}

static inline void header_write(void *block, uint64_t size, uint32_t record)
{
    *header_of(block) = (struct block_header){size, BLOCK_HEADER_TAG, record};
}

/* What the program may ask for and still leave room for a header. */
static inline bool header_fits(size_t size)
{
    return size <= PTRDIFF_MAX - BLOCK_HEADER_SIZE;
}

#endif
