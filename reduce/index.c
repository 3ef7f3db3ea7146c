/* The memory of an entry_index (index.h): it doubles before it is half
 * full, up to 2^31 slots (an entry number must fit in a slot's 32 bits). */
#include "index.h"

#include <stdlib.h>

enum { FIRST_SIZE = 1024 };

bool entry_index_init(struct entry_index *index)
{
    index->slots = calloc(FIRST_SIZE, sizeof *index->slots);
    index->mask = FIRST_SIZE - 1;
    index->used = 0;
    return index->slots != NULL;
}

void entry_index_free(struct entry_index *index)
{
    free(index->slots);
    index->slots = NULL;
}

static bool double_size(struct entry_index *index)
{
    size_t size = (index->mask + 1) * 2;
    if (size > (size_t)1 << 31)
        return false;
    struct index_slot *slots = calloc(size, sizeof *slots);
    if (!slots)
        return false;
    for (size_t old = 0; old <= index->mask; old++) {
        if (!index->slots[old].entry)
            continue;
        size_t slot = (size_t)index->slots[old].hash & (size - 1);
        while (slots[slot].entry)
            slot = (slot + 1) & (size - 1);
        slots[slot] = index->slots[old];
    }
    free(index->slots);
    index->slots = slots;
    index->mask = size - 1;
    return true;
}

bool entry_index_add(struct entry_index *index, size_t slot, uint64_t hash, uint64_t entry)
{
    if (entry >= UINT32_MAX)
        return false;
    index->slots[slot].hash = (uint32_t)hash;
    index->slots[slot].entry = (uint32_t)(entry + 1);
    index->used++;
    return index->used * 2 <= index->mask + 1 || double_size(index);
}
