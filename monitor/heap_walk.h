/* Finds the live blocks with a header (header.h) by walking glibc's heaps
 * chunk by chunk: the header mode keeps no list of its blocks. */
#ifndef MPROF_HEAP_WALK_H
#define MPROF_HEAP_WALK_H

#include <stdint.h>

#include "block_map.h"
#include "memory_map.h"

/* Visits, in address order within each heap, every chunk that holds a
 * live block with a header: the block the program sees, its size and its
 * record.  Reads only mapped, readable memory of map.  Returns how many
 * times the walk lost a heap's chain of chunks and found it again (a chunk
 * being split or merged by a stopped thread). */
uint64_t heap_walk(const struct memory_map *map, block_visitor *visit, void *context);

#endif
