/* The live-block map of block_map.h: sharded open-addressing tables of
 * one word per block. */
#include "block_map.h"

#include <stdatomic.h>

#include "arena.h"
#include "compiler.h"
#include "hash.h"
#include "kinds.h"
#include "lock.h"

/* Two maps with the same code.  The narrow one holds nearly every block in
 * one word: the pointer divided by 16 (glibc's alignment) above its kind
 * number.  The wide one, two words a slot, holds what that word cannot
 * name: a pointer off the 16-byte grid or past 2^48, or a block whose kind
 * found no number (past a million kinds); it stays empty in the programs
 * of the benchmark suite. */
#define NARROW_POINTER_LIMIT (UINT64_C(1) << 48)

/* Sharded so that threads freeing and allocating at once rarely meet on a
 * lock: the shard comes from the pointer's hash. */
#define SHARD_BITS 6
#define SHARD_COUNT (1u << SHARD_BITS)
/* Tables grow by half when 3/4 full, so they are never less than half
 * full: at most 16 bytes per block in narrow slots. */
#define INITIAL_SLOTS 256u

struct shard {
    spinlock_t lock; /* guards everything below */
    uint64_t slots;  /* the table's size */
    uint64_t used;   /* occupied slots */
    uint64_t *words; /* linear probing, no tombstones; 0: empty */
} CACHE_ALIGNED;

struct map {
    struct shard shards[SHARD_COUNT];
    atomic_uint_least64_t blocks; /* only read to skip an empty wide map */
};

static struct map narrow, wide;

/* A slot's contents: the block and what the free will need. */
struct entry {
    uintptr_t pointer;
    uint64_t value; /* narrow: the kind; wide: kind_pack(size, record) */
};

static inline unsigned words_per_slot(bool is_wide)
{
    return is_wide ? 2 : 1;
}

static inline uintptr_t pointer_at(const uint64_t *words, uint64_t index, bool is_wide)
{
    if (is_wide)
        return words[2 * index];
    return (uintptr_t)(words[index] >> KIND_BITS) << 4;
}

static inline struct entry entry_at(const uint64_t *words, uint64_t index, bool is_wide)
{
    if (is_wide)
        return (struct entry){words[2 * index], words[2 * index + 1]};
    return (struct entry){pointer_at(words, index, false), words[index] & KIND_NONE};
}

static inline void store(uint64_t *words, uint64_t index, struct entry entry, bool is_wide)
{
    if (is_wide) {
        words[2 * index] = entry.pointer;
        words[2 * index + 1] = entry.value;
    } else {
        words[index] = (uint64_t)(entry.pointer >> 4) << KIND_BITS | entry.value;
    }
}

static inline void clear(uint64_t *words, uint64_t index, bool is_wide)
{
    words[words_per_slot(is_wide) * index] = 0;
}

/* Each block hashed on its own.  Hashing pages and keeping the offset in
 * the page, for locality, made neighbouring pages' runs of slots overlap
 * and merge: 110 probes per lookup on python3 against 3.5 this way. */
static inline uint64_t pointer_hash(uintptr_t pointer)
{
    return mix64(pointer);
}

static inline struct shard *shard_of(struct map *map, uint64_t hash)
{
    return &map->shards[hash >> (64 - SHARD_BITS)];
}

/* The hash's bits below the shard's, scaled to the table size. */
static inline uint64_t home_slot(const struct shard *shard, uint64_t hash)
{
    return (uint64_t)(((unsigned __int128)(hash << SHARD_BITS) * shard->slots) >> 64);
}

static inline uint64_t next_slot(const struct shard *shard, uint64_t slot)
{
    return slot + 1 < shard->slots ? slot + 1 : 0;
}

/* How far forward from `from` slot `to` lies, wrapping around. */
static inline uint64_t distance(const struct shard *shard, uint64_t from, uint64_t to)
{
    return to >= from ? to - from : to + shard->slots - from;
}

static size_t table_bytes(uint64_t slots, bool is_wide)
{
    return sizeof(uint64_t) * words_per_slot(is_wide) * slots;
}

static void place(struct shard *shard, struct entry entry, bool is_wide)
{
    uint64_t index = home_slot(shard, pointer_hash(entry.pointer));
    while (pointer_at(shard->words, index, is_wide))
        index = next_slot(shard, index);
    store(shard->words, index, entry, is_wide);
}

/* One shard grows at a time, so the old and new tables together add a
 * 64th of the map's size to the peak, not twice the map. */
MONITOR_TEXT static bool grow(struct shard *shard, bool is_wide)
{
    uint64_t old_slots = shard->slots;
    uint64_t *old_words = shard->words;
    uint64_t new_slots = old_slots ? old_slots + old_slots / 2 : INITIAL_SLOTS;
    uint64_t *new_words = region_map(table_bytes(new_slots, is_wide));
    if (!new_words)
        return false;
    shard->words = new_words;
    shard->slots = new_slots;
    if (old_words) {
        for (uint64_t i = 0; i < old_slots; i++)
            if (pointer_at(old_words, i, is_wide))
                place(shard, entry_at(old_words, i, is_wide), is_wide);
        region_unmap(old_words, table_bytes(old_slots, is_wide));
    }
    return true;
}

MONITOR_TEXT_INLINE static bool insert(struct map *map, struct entry entry, bool is_wide,
                                       bool *replaced)
{
    uint64_t hash = pointer_hash(entry.pointer);
    struct shard *shard = shard_of(map, hash);
    spin_lock(&shard->lock);
    /* Keep the load at most 3/4 so that probes stay short. */
    if (unlikely(!shard->words || (shard->used + 1) * 4 > 3 * shard->slots)) {
        if (!grow(shard, is_wide)) {
            spin_unlock(&shard->lock);
            return false;
        }
    }
    uint64_t index = home_slot(shard, hash);
    for (;; index = next_slot(shard, index)) {
        uintptr_t present = pointer_at(shard->words, index, is_wide);
        if (!present) {
            shard->used++;
            if (is_wide)
                atomic_fetch_add_explicit(&map->blocks, 1, memory_order_relaxed);
            break;
        }
        if (present == entry.pointer) {
            *replaced = true;
            break;
        }
    }
    store(shard->words, index, entry, is_wide);
    spin_unlock(&shard->lock);
    return true;
}

MONITOR_TEXT_INLINE static bool take(struct map *map, uintptr_t pointer, bool is_wide,
                                     struct entry *taken)
{
    uint64_t hash = pointer_hash(pointer);
    struct shard *shard = shard_of(map, hash);
    spin_lock(&shard->lock);
    if (unlikely(!shard->words)) {
        spin_unlock(&shard->lock);
        return false;
    }
    uint64_t *words = shard->words;
    uint64_t index = home_slot(shard, hash);
    for (;; index = next_slot(shard, index)) {
        uintptr_t present = pointer_at(words, index, is_wide);
        if (!present) {
            spin_unlock(&shard->lock);
            return false;
        }
        if (present == pointer)
            break;
    }
    *taken = entry_at(words, index, is_wide);
    /* Backward-shift deletion: pull later entries of the probe run into the
     * hole when the hole lies between their home slot and where they are. */
    uint64_t hole = index;
    for (uint64_t next = next_slot(shard, hole);; next = next_slot(shard, next)) {
        uintptr_t moved = pointer_at(words, next, is_wide);
        if (!moved)
            break;
        uint64_t home = home_slot(shard, pointer_hash(moved));
        if (distance(shard, home, next) >= distance(shard, hole, next)) {
            store(words, hole, entry_at(words, next, is_wide), is_wide);
            hole = next;
        }
    }
    clear(words, hole, is_wide);
    shard->used--;
    if (is_wide)
        atomic_fetch_sub_explicit(&map->blocks, 1, memory_order_relaxed);
    spin_unlock(&shard->lock);
    return true;
}

/* Racy reads of a table that may be replaced at any time: prefetching a
 * stale address is harmless. */
MONITOR_TEXT_INLINE void block_map_prefetch(uintptr_t pointer)
{
    uint64_t hash = pointer_hash(pointer);
    const struct shard *shard = shard_of(&narrow, hash);
    const uint64_t *words = __atomic_load_n(&shard->words, __ATOMIC_RELAXED);
    uint64_t slots = __atomic_load_n(&shard->slots, __ATOMIC_RELAXED);
    uint64_t index = (uint64_t)(((unsigned __int128)(hash << SHARD_BITS) * slots) >> 64);
    if (words)
        __builtin_prefetch(&words[index], 1);
}

static inline bool wide_has_blocks(void)
{
    return atomic_load_explicit(&wide.blocks, memory_order_relaxed) != 0;
}

MONITOR_TEXT_INLINE bool block_map_insert(uintptr_t pointer, uint64_t size, uint32_t record,
                                       bool *replaced)
{
    *replaced = false;
    struct entry dropped;
    if (likely(pointer % 16 == 0 && pointer < NARROW_POINTER_LIMIT)) {
        uint32_t kind = kinds_find(size, record);
        if (likely(kind != KIND_NONE)) {
            if (unlikely(wide_has_blocks()) && take(&wide, pointer, true, &dropped))
                *replaced = true;
            return insert(&narrow, (struct entry){pointer, kind}, false, replaced);
        }
    }
    if (take(&narrow, pointer, false, &dropped))
        *replaced = true;
    return insert(&wide, (struct entry){pointer, kind_pack(size, record)}, true, replaced);
}

MONITOR_TEXT_INLINE bool block_map_remove(uintptr_t pointer, struct block_info *info)
{
    struct entry entry;
    uint64_t packed;
    if (likely(take(&narrow, pointer, false, &entry)))
        packed = kind_packed((uint32_t)entry.value);
    else if (unlikely(wide_has_blocks()) && take(&wide, pointer, true, &entry))
        packed = entry.value;
    else
        return false;
    info->size = packed >> KIND_RECORD_BITS;
    info->record = (uint32_t)(packed & ((UINT32_C(1) << KIND_RECORD_BITS) - 1));
    return true;
}

void block_map_restore(uintptr_t pointer, const struct block_info *info)
{
    bool replaced;
    block_map_insert(pointer, info->size, info->record, &replaced);
}

static void each_shard(void (*action)(spinlock_t *))
{
    for (unsigned i = 0; i < SHARD_COUNT; i++) {
        action(&narrow.shards[i].lock);
        action(&wide.shards[i].lock);
    }
}

void block_map_fork_prepare(void)
{
    each_shard(spin_lock);
    kinds_fork_prepare();
}

void block_map_fork_parent(void)
{
    kinds_fork_parent();
    each_shard(spin_unlock);
}

void block_map_fork_child(void)
{
    kinds_fork_child();
    each_shard(spin_reset);
}
