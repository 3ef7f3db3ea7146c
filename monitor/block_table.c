/* Growing a table of block_table.h, off the hot path. */
#include "block_table.h"

static void place(struct block_table *table, struct block_entry entry, bool is_wide)
{
    uint64_t index = block_table_home(table->slots, block_table_hash(entry.pointer));
    while (block_table_pointer_at(table->words, index, is_wide))
        index = block_table_next(table, index);
    block_table_store(table->words, index, entry, is_wide);
}

/* One table grows at a time, so the old and new tables together add a
 * 64th of the map's size to the peak, not twice the map.  The lock held. */
MONITOR_TEXT bool block_table_grow(struct block_table *table, bool is_wide)
{
    uint64_t old_slots = table->slots;
    uint64_t *old_words = table->words;
    uint64_t new_slots = old_slots ? old_slots + old_slots / 2 : BLOCK_TABLE_INITIAL_SLOTS;
    uint64_t *new_words = region_map(block_table_bytes(new_slots, is_wide));
    if (!new_words)
        return false;
    table->words = new_words;
    table->slots = new_slots;
    if (old_words) {
        for (uint64_t i = 0; i < old_slots; i++)
            if (block_table_pointer_at(old_words, i, is_wide))
                place(table, block_table_entry_at(old_words, i, is_wide), is_wide);
        region_unmap(old_words, block_table_bytes(old_slots, is_wide));
    }
    return true;
}

