/* The open-addressing table of ptable.h. */
#include "ptable.h"

#define INITIAL_BITS 8

static void ptable_place(struct ptable *table, uint64_t hash, void *entry)
{
    uint64_t mask = ptable_slots(table) - 1;
    uint64_t i = ptable_index(hash, table->bits);
    while (table->items[i])
        i = (i + 1) & mask;
    table->items[i] = entry;
    table->hashes[i] = hash;
}

/* An empty table of 2^bits slots; false when out of memory. */
static bool make_slots(struct ptable *table, unsigned bits)
{
    *table = (struct ptable){.bits = bits};
    table->hashes = region_map(sizeof(uint64_t) << bits);
    table->items = region_map(sizeof(void *) << bits);
    if (table->hashes && table->items)
        return true;
    region_unmap(table->hashes, sizeof(uint64_t) << bits);
    region_unmap(table->items, sizeof(void *) << bits);
    return false;
}

MONITOR_TEXT bool ptable_add(struct ptable *table, uint64_t hash, void *entry)
{
    if (!table->bits || (table->used + 1) * 2 > ptable_slots(table)) {
        struct ptable grown;
        if (!make_slots(&grown, table->bits ? table->bits + 1 : INITIAL_BITS))
            return false;
        for (uint64_t i = 0; i < ptable_slots(table); i++)
            if (table->items[i])
                ptable_place(&grown, table->hashes[i], table->items[i]);
        grown.used = table->used;
        ptable_release(table);
        *table = grown;
    }
    ptable_place(table, hash, entry);
    table->used++;
    return true;
}

bool ptable_rehash(struct ptable *table, uint64_t (*hash_of)(const void *entry))
{
    if (!table->bits)
        return true;
    struct ptable placed;
    if (!make_slots(&placed, table->bits))
        return false;
    placed.used = table->used;
    for (uint64_t i = 0; i < ptable_slots(table); i++)
        if (table->items[i])
            ptable_place(&placed, hash_of(table->items[i]), table->items[i]);
    ptable_release(table);
    *table = placed;
    return true;
}

void ptable_release(struct ptable *table)
{
    if (table->bits) {
        region_unmap(table->hashes, sizeof(uint64_t) << table->bits);
        region_unmap(table->items, sizeof(void *) << table->bits);
    }
    *table = (struct ptable){0};
}
