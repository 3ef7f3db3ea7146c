/* Block kinds: the distinct (requested size, leak record) pairs, numbered
 * densely so that the pointer map can name a live block's size and record
 * in 20 bits and keep a slot to 8 bytes.  Programs repeat the same sizes
 * from the same places: python3's 4 million allocations make some 20
 * thousand kinds. */
#ifndef MPROF_KINDS_H
#define MPROF_KINDS_H

#include <stdint.h>

#define KIND_BITS 20
/* Returned when every kind number is taken: the block needs a wide slot. */
#define KIND_NONE ((UINT32_C(1) << KIND_BITS) - 1)
#define KIND_CHUNK_BITS 12

/* Sizes past 2^40 cannot be allocated on this hardware; they saturate. */
#define KIND_RECORD_BITS 24
#define KIND_SIZE_LIMIT ((UINT64_C(1) << (64 - KIND_RECORD_BITS)) - 1)

static inline uint64_t kind_pack(uint64_t size, uint32_t record)
{
    if (size > KIND_SIZE_LIMIT)
        size = KIND_SIZE_LIMIT;
    return size << KIND_RECORD_BITS | (record & ((UINT32_C(1) << KIND_RECORD_BITS) - 1));
}

/* The size and the record of a packed pair. */
static inline uint64_t kind_size(uint64_t packed)
{
    return packed >> KIND_RECORD_BITS;
}

static inline uint32_t kind_record(uint64_t packed)
{
    return (uint32_t)(packed & ((UINT32_C(1) << KIND_RECORD_BITS) - 1));
}

/* The packed pair of each kind, in chunks that never move, so readers need
 * no lock: a kind number is only ever read after the map slot holding it
 * was written, under a lock taken after the kind was made. */
extern uint64_t *kind_chunks[(KIND_NONE >> KIND_CHUNK_BITS) + 1];

static inline uint64_t kind_packed(uint32_t kind)
{
    return kind_chunks[kind >> KIND_CHUNK_BITS][kind & ((1u << KIND_CHUNK_BITS) - 1)];
}

/* The kind of (size, record), made on first use; KIND_NONE when there is
 * no number or memory left. */
uint32_t kinds_find(uint64_t size, uint32_t record);

void kinds_fork_prepare(void);
void kinds_fork_parent(void);
void kinds_fork_child(void);

#endif
