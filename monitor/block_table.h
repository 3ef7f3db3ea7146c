/* One open-addressing table of live blocks: pointer -> what their free
 * needs, under a lock of its own.  The live-block map (block_map.c) is
 * sharded tables of these; each pool (pools.c) has one for its objects. */
#ifndef MPROF_BLOCK_TABLE_H
#define MPROF_BLOCK_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "compiler.h"
#include "hash.h"
#include "kinds.h"
#include "lock.h"

/* The sharded map takes the hash's top bits for the shard: a table's home
 * slot comes from the bits below them. */
#define BLOCK_TABLE_SHARD_BITS 6
/* Tables grow by half when 3/4 full, so they are never less than half
 * full: at most 16 bytes per block in narrow slots. */
#define BLOCK_TABLE_INITIAL_SLOTS 256u

/* A narrow table holds a block in one word: the pointer divided by 16
 * (glibc's alignment) above its kind number.  A wide one, two words a slot,
 * holds any pointer with kind_pack(size, record). */
struct block_table {
    spinlock_t lock; /* guards everything below */
    uint64_t slots;  /* the table's size */
    uint64_t used;   /* occupied slots */
    uint64_t *words; /* linear probing, no tombstones; 0: empty */
} CACHE_ALIGNED;

/* A slot's contents: the block and what the free will need. */
struct block_entry {
    uintptr_t pointer;
    uint64_t value; /* narrow: the kind; wide: kind_pack(size, record) */
};

static inline unsigned block_table_words_per_slot(bool is_wide)
{
    return is_wide ? 2 : 1;
}

static inline uintptr_t block_table_pointer_at(const uint64_t *words, uint64_t index, bool is_wide)
{
    if (is_wide)
        return words[2 * index];
    return (uintptr_t)(words[index] >> KIND_BITS) << 4;
}

static inline struct block_entry block_table_entry_at(const uint64_t *words, uint64_t index, bool is_wide)
{
    if (is_wide)
        return (struct block_entry){words[2 * index], words[2 * index + 1]};
    return (struct block_entry){block_table_pointer_at(words, index, false), words[index] & KIND_NONE};
}

static inline void block_table_store(uint64_t *words, uint64_t index, struct block_entry entry, bool is_wide)
{
    if (is_wide) {
        words[2 * index] = entry.pointer;
        words[2 * index + 1] = entry.value;
    } else {
        words[index] = (uint64_t)(entry.pointer >> 4) << KIND_BITS | entry.value;
    }
}

/* Each block hashed on its own.  Hashing pages and keeping the offset in
 * the page, for locality, made neighbouring pages' runs of slots overlap
 * and merge: 110 probes per lookup on python3 against 3.5 this way. */
static inline uint64_t block_table_hash(uintptr_t pointer)
{
    return mix64(pointer);
}

/* The hash's bits below the shard's, scaled to the table size. */
static inline uint64_t block_table_home(uint64_t slots, uint64_t hash)
{
    return (uint64_t)(((unsigned __int128)(hash << BLOCK_TABLE_SHARD_BITS) * slots) >> 64);
}

static inline uint64_t block_table_next(const struct block_table *table, uint64_t slot)
{
    return slot + 1 < table->slots ? slot + 1 : 0;
}

/* How far forward from `from` slot `to` lies, wrapping around. */
static inline uint64_t block_table_distance(const struct block_table *table, uint64_t from, uint64_t to)
{
    return to >= from ? to - from : to + table->slots - from;
}

static inline size_t block_table_bytes(uint64_t slots, bool is_wide)
{
    return sizeof(uint64_t) * block_table_words_per_slot(is_wide) * slots;
}

/* Makes the table half as large again, or its first; the lock held.  False
 * when out of memory. */
bool block_table_grow(struct block_table *table, bool is_wide);

/* Puts entry in, replacing (*replaced) an entry of the same pointer; the
 * lock held.  False when the table could not grow. */
MONITOR_TEXT_INLINE static inline bool block_table_insert(struct block_table *table, uint64_t hash,
                                                          struct block_entry entry, bool is_wide, bool *replaced)
{
    /* Keep the load at most 3/4 so that probes stay short. */
    if (unlikely(!table->words || (table->used + 1) * 4 > 3 * table->slots)) {
        if (!block_table_grow(table, is_wide))
            return false;
    }
    uint64_t index = block_table_home(table->slots, hash);
    for (;; index = block_table_next(table, index)) {
        uintptr_t present = block_table_pointer_at(table->words, index, is_wide);
        if (!present) {
            table->used++;
            break;
        }
        if (present == entry.pointer) {
            *replaced = true;
            break;
        }
    }
    block_table_store(table->words, index, entry, is_wide);
    return true;
}

/* The entry of pointer, left in place, into *found; the lock held.  False
 * when there is none. */
static inline bool block_table_find(const struct block_table *table, uint64_t hash, uintptr_t pointer, bool is_wide,
                                    struct block_entry *found)
{
    if (!table->words)
        return false;
    for (uint64_t index = block_table_home(table->slots, hash);; index = block_table_next(table, index)) {
        uintptr_t present = block_table_pointer_at(table->words, index, is_wide);
        if (!present)
            return false;
        if (present == pointer) {
            *found = block_table_entry_at(table->words, index, is_wide);
            return true;
        }
    }
}

/* Takes the entry of pointer out into *taken; the lock held.  False when
 * there is none. */
MONITOR_TEXT_INLINE static inline bool block_table_take(struct block_table *table, uint64_t hash, uintptr_t pointer,
                                                        bool is_wide, struct block_entry *taken)
{
    if (unlikely(!table->words))
        return false;
    uint64_t *words = table->words;
    uint64_t index = block_table_home(table->slots, hash);
    for (;; index = block_table_next(table, index)) {
        uintptr_t present = block_table_pointer_at(words, index, is_wide);
        if (!present)
            return false;
        if (present == pointer)
            break;
    }
    *taken = block_table_entry_at(words, index, is_wide);
    /* Backward-shift deletion: pull later entries of the probe run into the
     * hole when the hole lies between their home slot and where they are. */
    uint64_t hole = index;
    for (uint64_t next = block_table_next(table, hole);; next = block_table_next(table, next)) {
        uintptr_t moved = block_table_pointer_at(words, next, is_wide);
        if (!moved)
            break;
        uint64_t home = block_table_home(table->slots, block_table_hash(moved));
        if (block_table_distance(table, home, next) >= block_table_distance(table, hole, next)) {
            block_table_store(words, hole, block_table_entry_at(words, next, is_wide), is_wide);
            hole = next;
        }
    }
    words[block_table_words_per_slot(is_wide) * hole] = 0;
    table->used--;
    return true;
}

#endif
