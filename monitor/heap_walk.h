/* Finds the live blocks with a header (header.h) by walking glibc's heaps
 * chunk by chunk: the header mode keeps no list of its blocks. */
#ifndef MPROF_HEAP_WALK_H
#define MPROF_HEAP_WALK_H

#include <stdint.h>

#include "block_map.h"
#include "memory_map.h"

/* Visits, in address order within each heap, every chunk that holds a
 * live block with a header: the block the program sees, its size and its
 * record.  Reads only mapped, readable memory of map.  *main_top: the
 * last chunk of the main arena's heap, its top, or 0.  Marks each mapping
 * that is a heap (mapping->heap): its free chunks hold what freed blocks
 * held; and each that holds large blocks' chunks, each a mapping of its
 * own (mapping->chunks). */
void heap_walk(struct memory_map *map, block_visitor *visit, void *context, uintptr_t *main_top);

/* The main arena's state, in the C library's data between start and end
 * (found by its top, and by its empty bins, which point at themselves);
 * its bytes in *size, or 0 when it is not there.  Its bins and top point
 * at free chunks, and where a block of 8 bytes or less ends its chunk's
 * memory, the next chunk starts at the block's own start: the scan must
 * not take these for the program's pointers. */
uintptr_t heap_main_arena(uintptr_t start, uintptr_t end, uintptr_t top, size_t *size);

#endif
