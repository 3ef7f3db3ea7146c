/* The live-block map of block_map.h: sharded tables of one word per
 * block. */
#include "block_map.h"

#include <stdatomic.h>

#include "block_table.h"

/* Two maps with the same code (block_table.h).  The narrow one holds nearly
 * every block in one word.  The wide one holds what that word cannot name:
 * a pointer off the 16-byte grid or past 2^48, or a block whose kind found
 * no number (past a million kinds); it stays empty in the programs of the
 * benchmark suite. */
#define NARROW_POINTER_LIMIT (UINT64_C(1) << 48)

/* Sharded so that threads freeing and allocating at once rarely meet on a
 * lock: the shard comes from the pointer's hash. */
#define SHARD_COUNT (1u << BLOCK_TABLE_SHARD_BITS)

struct map {
    struct block_table shards[SHARD_COUNT];
    atomic_uint_least64_t blocks; /* only read to skip an empty wide map */
};

static struct map narrow, wide;

static inline struct block_table *shard_of(struct map *map, uint64_t hash)
{
    return &map->shards[hash >> (64 - BLOCK_TABLE_SHARD_BITS)];
}

MONITOR_TEXT_INLINE static bool insert(struct map *map, struct block_entry entry, bool is_wide, bool *replaced)
{
    uint64_t hash = block_table_hash(entry.pointer);
    struct block_table *shard = shard_of(map, hash);
    spin_lock(&shard->lock);
    uint64_t used = shard->used;
    bool inserted = block_table_insert(shard, hash, entry, is_wide, replaced);
    if (is_wide && shard->used > used)
        atomic_fetch_add_explicit(&map->blocks, 1, memory_order_relaxed);
    spin_unlock(&shard->lock);
    return inserted;
}

MONITOR_TEXT_INLINE static bool take(struct map *map, uintptr_t pointer, bool is_wide, struct block_entry *taken)
{
    uint64_t hash = block_table_hash(pointer);
    struct block_table *shard = shard_of(map, hash);
    spin_lock(&shard->lock);
    bool found = block_table_take(shard, hash, pointer, is_wide, taken);
    if (is_wide && found)
        atomic_fetch_sub_explicit(&map->blocks, 1, memory_order_relaxed);
    spin_unlock(&shard->lock);
    return found;
}

/* Racy reads of a table that may be replaced at any time: prefetching a
 * stale address is harmless. */
MONITOR_TEXT_INLINE void block_map_prefetch(uintptr_t pointer)
{
    const struct block_table *shard = shard_of(&narrow, block_table_hash(pointer));
    const uint64_t *words = __atomic_load_n(&shard->words, __ATOMIC_RELAXED);
    uint64_t index = block_table_home(__atomic_load_n(&shard->slots, __ATOMIC_RELAXED), block_table_hash(pointer));
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
    struct block_entry dropped;
    if (likely(pointer % 16 == 0 && pointer < NARROW_POINTER_LIMIT)) {
        uint32_t kind = kinds_find(size, record);
        if (likely(kind != KIND_NONE)) {
            if (unlikely(wide_has_blocks()) && take(&wide, pointer, true, &dropped))
                *replaced = true;
            return insert(&narrow, (struct block_entry){pointer, kind}, false, replaced);
        }
    }
    if (take(&narrow, pointer, false, &dropped))
        *replaced = true;
    return insert(&wide, (struct block_entry){pointer, kind_pack(size, record)}, true, replaced);
}

/* What a packed kind (kinds.h) says of its block. */
static inline struct block_info info_of(uint64_t packed)
{
    return (struct block_info){kind_size(packed), kind_record(packed)};
}

MONITOR_TEXT_INLINE bool block_map_remove(uintptr_t pointer, struct block_info *info)
{
    struct block_entry entry;
    uint64_t packed;
    if (likely(take(&narrow, pointer, false, &entry)))
        packed = kind_packed((uint32_t)entry.value);
    else if (unlikely(wide_has_blocks()) && take(&wide, pointer, true, &entry))
        packed = entry.value;
    else
        return false;
    *info = info_of(packed);
    return true;
}

static bool find(struct map *map, uintptr_t pointer, bool is_wide, struct block_entry *found)
{
    uint64_t hash = block_table_hash(pointer);
    struct block_table *shard = shard_of(map, hash);
    spin_lock(&shard->lock);
    bool present = block_table_find(shard, hash, pointer, is_wide, found);
    spin_unlock(&shard->lock);
    return present;
}

bool block_map_find(uintptr_t pointer, struct block_info *info)
{
    struct block_entry entry;
    uint64_t packed;
    if (find(&narrow, pointer, false, &entry))
        packed = kind_packed((uint32_t)entry.value);
    else if (wide_has_blocks() && find(&wide, pointer, true, &entry))
        packed = entry.value;
    else
        return false;
    *info = info_of(packed);
    return true;
}

void block_map_restore(uintptr_t pointer, const struct block_info *info)
{
    bool replaced;
    block_map_insert(pointer, info->size, info->record, &replaced);
}

static void visit_table(struct block_table *table, bool is_wide, bool locking, block_visitor *visit,
                        void *context)
{
    if (locking)
        spin_lock(&table->lock);
    for (uint64_t i = 0; table->words && i < table->slots; i++) {
        struct block_entry entry = block_table_entry_at(table->words, i, is_wide);
        if (!entry.pointer)
            continue;
        struct block_info info = info_of(is_wide ? entry.value : kind_packed((uint32_t)entry.value));
        visit(context, entry.pointer, info.size, info.record);
    }
    if (locking)
        spin_unlock(&table->lock);
}

void block_map_each(bool locking, block_visitor *visit, void *context)
{
    for (unsigned i = 0; i < SHARD_COUNT; i++) {
        visit_table(&narrow.shards[i], false, locking, visit, context);
        visit_table(&wide.shards[i], true, locking, visit, context);
    }
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
