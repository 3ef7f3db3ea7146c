/* The live blocks: pointer -> (requested size, leak record).  The monitor's
 * only per-object memory, kept apart from the blocks so that pointers it
 * never saw are harmless. */
#ifndef MPROF_BLOCK_MAP_H
#define MPROF_BLOCK_MAP_H

#include <stdbool.h>
#include <stdint.h>

struct block_info {
    uint64_t size;
    uint32_t record;
};

/* False when the map could not grow; the block then goes untracked.
 * *replaced is set when the pointer was already present (its free was
 * missed, for example in a signal handler that interrupted the monitor). */
bool block_map_insert(uintptr_t pointer, uint64_t size, uint32_t record, bool *replaced);
/* Starts loading the slot where pointer would go, so that the stack walk
 * hides the cache miss of the insert that follows it. */
void block_map_prefetch(uintptr_t pointer);
/* False when the pointer is not a live block the monitor returned. */
bool block_map_remove(uintptr_t pointer, struct block_info *info);
/* Whether the pointer is a live block of the map, left in it. */
bool block_map_find(uintptr_t pointer, struct block_info *info);
/* Put back a block that block_map_remove took out, when the realloc failed. */
void block_map_restore(uintptr_t pointer, const struct block_info *info);

/* What an enumeration of live blocks hands its visitor for each. */
typedef void block_visitor(void *context, uintptr_t pointer, uint64_t size, uint32_t record);
/* Visits every live block of the map.  locking: take each table's lock
 * while reading it; without, for a caller that stopped every other thread
 * (one may be stopped holding a lock), the tables are read as they are. */
void block_map_each(bool locking, block_visitor *visit, void *context);

void block_map_fork_prepare(void);
void block_map_fork_parent(void);
void block_map_fork_child(void);

#endif
