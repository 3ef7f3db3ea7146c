/* The open-addressing table of entry_table.h. */
#include "entry_table.h"

#define INITIAL_BITS 8

static void entry_table_place(struct entry_table *table, uint64_t hash, void *entry)
{
    uint64_t mask = entry_table_slots(table) - 1;
    uint64_t i = entry_table_index(hash, table->bits);
    while (table->items[i])
        i = (i + 1) & mask;
    table->items[i] = entry;
    table->hashes[i] = hash;
}

/* An empty table of 2^bits slots; false when out of memory. */
static bool make_slots(struct entry_table *table, unsigned bits)
{
    *table = (struct entry_table){.bits = bits};
    table->hashes = region_map(sizeof(uint64_t) << bits);
    table->items = region_map(sizeof(void *) << bits);
    if (table->hashes && table->items)
        return true;
    region_unmap(table->hashes, sizeof(uint64_t) << bits);
    region_unmap(table->items, sizeof(void *) << bits);
    return false;
}

MONITOR_TEXT bool entry_table_add(struct entry_table *table, uint64_t hash, void *entry)
{
    if (!table->bits || (table->used + 1) * 2 > entry_table_slots(table)) {
        struct entry_table grown;
        if (!make_slots(&grown, table->bits ? table->bits + 1 : INITIAL_BITS))
            return false;
        for (uint64_t i = 0; i < entry_table_slots(table); i++)
            if (table->items[i])
                entry_table_place(&grown, table->hashes[i], table->items[i]);
        grown.used = table->used;
        entry_table_release(table);
        *table = grown;
    }
    entry_table_place(table, hash, entry);
    table->used++;
    return true;
}

bool entry_table_rehash(struct entry_table *table, uint64_t (*hash_of)(const void *entry))
{
    if (!table->bits)
        return true;
    struct entry_table placed;
    if (!make_slots(&placed, table->bits))
        return false;
    placed.used = table->used;
    for (uint64_t i = 0; i < entry_table_slots(table); i++)
        if (table->items[i])
            entry_table_place(&placed, hash_of(table->items[i]), table->items[i]);
    entry_table_release(table);
    *table = placed;
    return true;
}

void entry_table_release(struct entry_table *table)
{
    if (table->bits) {
        region_unmap(table->hashes, sizeof(uint64_t) << table->bits);
        region_unmap(table->items, sizeof(void *) << table->bits);
    }
    *table = (struct entry_table){0};
}
