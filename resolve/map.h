/* A hash map from 64-bit keys to pointers (see map.c). */

#ifndef MPROF_RESOLVE_MAP_H
#define MPROF_RESOLVE_MAP_H

#include <stddef.h>
#include <stdint.h>

/* Open addressing with linear probing; an empty slot has a NULL value, so
 * NULL cannot be stored.  Used for the answer cache (addresses) and for
 * per-unit indexes (Dwarf_CU pointers).  Zero-initialized means empty. */
struct pointer_map {
    uint64_t *keys;
    void **values;
    size_t capacity; /* a power of two, or 0 */
    size_t count;
};

void *map_find(const struct pointer_map *map, uint64_t key);
void map_insert(struct pointer_map *map, uint64_t key, void *value);
void map_clear(struct pointer_map *map, void (*free_value)(void *));

#endif
