#include "ptrmap.h"

#include "arena.h"
#include "compiler.h"
#include "hash.h"
#include "lock.h"

/* Sharded so that threads freeing and allocating at once rarely meet on a
 * lock: the shard comes from the pointer's hash. */
#define SHARD_BITS 6
#define SHARD_COUNT (1u << SHARD_BITS)
#define INITIAL_SLOTS 128u

/* size and record packed in one word: 16 bytes per slot. */
#define RECORD_BITS 24
#define RECORD_MASK ((1u << RECORD_BITS) - 1)
#define SIZE_LIMIT ((UINT64_C(1) << (64 - RECORD_BITS)) - 1)

struct slot {
    uintptr_t pointer; /* 0: empty */
    uint64_t packed;   /* size << RECORD_BITS | record */
};

struct shard {
    spinlock_t lock;    /* guards everything below */
    unsigned bits;      /* log2 of the slot count */
    uint64_t used;      /* occupied slots */
    struct slot *slots; /* linear probing, no tombstones */
} CACHE_ALIGNED;

/* Every field of each shard is guarded by that shard's lock. */
static struct shard shards[SHARD_COUNT];

/* Pages are hashed, so that they spread evenly over the shards and slots;
 * within a page the block's offset is kept, so that blocks allocated one
 * after the other (usually neighbours in one page) have their slots in the
 * same few cache lines of the table instead of one cache miss each. */
static inline uint64_t pointer_hash(uintptr_t pointer)
{
    return mix64(pointer >> 12);
}

static inline struct shard *shard_of(uint64_t hash)
{
    return &shards[hash >> (64 - SHARD_BITS)];
}

static inline uint64_t home_slot(const struct shard *shard, uint64_t hash, uintptr_t pointer)
{
    uint64_t page_slot = (hash << SHARD_BITS) >> (64 - shard->bits);
    return (page_slot + ((pointer >> 4) & 255)) & ((UINT64_C(1) << shard->bits) - 1);
}

static inline uint64_t pack(uint64_t size, uint32_t record)
{
    /* Sizes past 2^40 cannot be allocated on this hardware; saturate. */
    if (size > SIZE_LIMIT)
        size = SIZE_LIMIT;
    return size << RECORD_BITS | (record & RECORD_MASK);
}

static void place(struct shard *shard, uintptr_t pointer, uint64_t packed)
{
    uint64_t mask = (UINT64_C(1) << shard->bits) - 1;
    uint64_t index = home_slot(shard, pointer_hash(pointer), pointer);
    while (shard->slots[index].pointer)
        index = (index + 1) & mask;
    shard->slots[index] = (struct slot){pointer, packed};
}

MONITOR_TEXT static bool grow(struct shard *shard)
{
    unsigned old_bits = shard->bits;
    struct slot *old_slots = shard->slots;
    unsigned new_bits = old_bits ? old_bits + 1 : __builtin_ctz(INITIAL_SLOTS);
    struct slot *new_slots = region_map(sizeof(struct slot) << new_bits);
    if (!new_slots)
        return false;
    shard->slots = new_slots;
    shard->bits = new_bits;
    if (old_slots) {
        for (uint64_t i = 0; i < (UINT64_C(1) << old_bits); i++)
            if (old_slots[i].pointer)
                place(shard, old_slots[i].pointer, old_slots[i].packed);
        region_unmap(old_slots, sizeof(struct slot) << old_bits);
    }
    return true;
}

MONITOR_TEXT_INLINE bool ptrmap_insert(uintptr_t pointer, uint64_t size, uint32_t record,
                                       bool *replaced)
{
    uint64_t hash = pointer_hash(pointer);
    struct shard *shard = shard_of(hash);
    *replaced = false;
    spin_lock(&shard->lock);
    /* Keep the load at most 3/4 so that probes stay short. */
    if (unlikely(!shard->slots || (shard->used + 1) * 4 > (UINT64_C(3) << shard->bits))) {
        if (!grow(shard)) {
            spin_unlock(&shard->lock);
            return false;
        }
    }
    uint64_t mask = (UINT64_C(1) << shard->bits) - 1;
    uint64_t index = home_slot(shard, hash, pointer);
    for (;;) {
        struct slot *slot = &shard->slots[index];
        if (!slot->pointer) {
            *slot = (struct slot){pointer, pack(size, record)};
            shard->used++;
            break;
        }
        if (slot->pointer == pointer) {
            slot->packed = pack(size, record);
            *replaced = true;
            break;
        }
        index = (index + 1) & mask;
    }
    spin_unlock(&shard->lock);
    return true;
}

MONITOR_TEXT_INLINE bool ptrmap_remove(uintptr_t pointer, struct block_info *info)
{
    uint64_t hash = pointer_hash(pointer);
    struct shard *shard = shard_of(hash);
    spin_lock(&shard->lock);
    if (unlikely(!shard->slots)) {
        spin_unlock(&shard->lock);
        return false;
    }
    uint64_t mask = (UINT64_C(1) << shard->bits) - 1;
    uint64_t index = home_slot(shard, hash, pointer);
    for (;;) {
        struct slot *slot = &shard->slots[index];
        if (!slot->pointer) {
            spin_unlock(&shard->lock);
            return false;
        }
        if (slot->pointer == pointer)
            break;
        index = (index + 1) & mask;
    }
    info->size = shard->slots[index].packed >> RECORD_BITS;
    info->record = (uint32_t)(shard->slots[index].packed & RECORD_MASK);
    /* Backward-shift deletion: pull later entries of the probe run into the
     * hole when the hole lies between their home slot and where they are. */
    uint64_t hole = index;
    for (uint64_t next = (hole + 1) & mask; shard->slots[next].pointer; next = (next + 1) & mask) {
        uintptr_t moved = shard->slots[next].pointer;
        uint64_t home = home_slot(shard, pointer_hash(moved), moved);
        if (((next - home) & mask) >= ((next - hole) & mask)) {
            shard->slots[hole] = shard->slots[next];
            hole = next;
        }
    }
    shard->slots[hole] = (struct slot){0, 0};
    shard->used--;
    spin_unlock(&shard->lock);
    return true;
}

void ptrmap_restore(uintptr_t pointer, const struct block_info *info)
{
    bool replaced;
    ptrmap_insert(pointer, info->size, info->record, &replaced);
}

void ptrmap_fork_prepare(void)
{
    for (unsigned i = 0; i < SHARD_COUNT; i++)
        spin_lock(&shards[i].lock);
}

void ptrmap_fork_parent(void)
{
    for (unsigned i = 0; i < SHARD_COUNT; i++)
        spin_unlock(&shards[i].lock);
}

void ptrmap_fork_child(void)
{
    for (unsigned i = 0; i < SHARD_COUNT; i++)
        spin_reset(&shards[i].lock);
}
