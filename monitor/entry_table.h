/* An open-addressing table of pointers to entries that live elsewhere (so
 * pointers to entries stay valid when the table grows), keyed by a 64-bit
 * hash stored beside each pointer so a probe compares entries only when the
 * hashes match.
 *
 *   void *entry = entry_table_find(&table, hash, same_entry, key);
 *   if (!entry && (entry = make(key)))
 *       entry_table_add(&table, hash, entry);
 *
 * Iterate with: for (i = 0; i < entry_table_slots(&t); i++) if (t.items[i]) ...
 */
#ifndef MPROF_ENTRY_TABLE_H
#define MPROF_ENTRY_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "compiler.h"
#include "hash.h"

struct entry_table {
    uint64_t *hashes; /* parallel to items */
    void **items;     /* NULL: empty slot */
    unsigned bits;    /* log2 of the slot count, 0 before the first add */
    uint64_t used;
};

static inline uint64_t entry_table_slots(const struct entry_table *table)
{
    return table->bits ? UINT64_C(1) << table->bits : 0;
}

static inline uint64_t entry_table_index(uint64_t hash, unsigned bits)
{
    return hash >> (64 - bits);
}

static inline void *entry_table_find(const struct entry_table *table, uint64_t hash,
                                bool (*same)(const void *entry, const void *key), const void *key)
{
    if (unlikely(!table->bits))
        return NULL;
    uint64_t mask = entry_table_slots(table) - 1;
    for (uint64_t i = entry_table_index(hash, table->bits);; i = (i + 1) & mask) {
        void *item = table->items[i];
        if (!item)
            return NULL;
        if (table->hashes[i] == hash && same(item, key))
            return item;
    }
}

/* False when the table could not grow. */
bool entry_table_add(struct entry_table *table, uint64_t hash, void *entry);
/* Places every entry again under the hash hash_of gives it now, after
 * their keys changed in place.  False when out of memory, and the table
 * keeps its old hashes. */
bool entry_table_rehash(struct entry_table *table, uint64_t (*hash_of)(const void *entry));
/* Unmaps the table's arrays (not the entries) and empties it. */
void entry_table_release(struct entry_table *table);

#endif
