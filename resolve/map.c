/*
 * The hash map behind mprof-resolve's two lookups by key: the answer cache
 * (return address -> answer) and each module's unit indexes (Dwarf_CU
 * pointer -> index).  Both are hit once per resolved address, so a lookup
 * must not cost more than a few probes.
 */

#include "map.h"

#include <stdlib.h>

#include "text.h"

static size_t map_slot(const struct pointer_map *map, uint64_t key)
{
    /* Fibonacci hashing spreads aligned addresses and pointers well. */
    size_t mask = map->capacity - 1;
    size_t index = (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & mask;
    while (map->values[index] != NULL && map->keys[index] != key)
        index = (index + 1) & mask;
    return index;
}

void *map_find(const struct pointer_map *map, uint64_t key)
{
    return map->count ? map->values[map_slot(map, key)] : NULL;
}

/* Stores VALUE under KEY, which must not be present yet. */
void map_insert(struct pointer_map *map, uint64_t key, void *value)
{
    if ((map->count + 1) * 4 > map->capacity * 3) {
        struct pointer_map grown = {0};
        grown.capacity = map->capacity ? map->capacity * 2 : 64;
        grown.keys = calloc(grown.capacity, sizeof *grown.keys);
        grown.values = calloc(grown.capacity, sizeof *grown.values);
        if (grown.keys == NULL || grown.values == NULL)
            out_of_memory();
        for (size_t i = 0; i < map->capacity; i++) {
            if (map->values[i] != NULL) {
                size_t slot = map_slot(&grown, map->keys[i]);
                grown.keys[slot] = map->keys[i];
                grown.values[slot] = map->values[i];
            }
        }
        grown.count = map->count;
        free(map->keys);
        free(map->values);
        *map = grown;
    }
    size_t slot = map_slot(map, key);
    map->keys[slot] = key;
    map->values[slot] = value;
    map->count++;
}

/* Empties MAP, passing each value to FREE_VALUE. */
void map_clear(struct pointer_map *map, void (*free_value)(void *))
{
    for (size_t i = 0; i < map->capacity; i++) {
        if (map->values[i] != NULL)
            free_value(map->values[i]);
    }
    free(map->keys);
    free(map->values);
    *map = (struct pointer_map){0};
}

