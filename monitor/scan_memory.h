/* The leak scan's own memory, mapped with the system calls alone: the
 * scan runs with the other threads stopped, and one may be stopped holding
 * the monitor's arena lock (region_map's), which the scan must not wait
 * for.  Kept out of the roots: it holds the blocks' addresses. */
#ifndef MPROF_SCAN_MEMORY_H
#define MPROF_SCAN_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A zeroed region of at least size bytes, or NULL. */
void *scan_map(size_t size);
/* Grows a region of scan_map's, keeping its contents; may move it; NULL,
 * and the region as it was, when it cannot. */
void *scan_grow(void *region, size_t old_size, size_t new_size);
void scan_unmap(void *region, size_t size);
/* The scan memory in [start, end): *cut_start and *cut_end the first such
 * range's part there; false when there is none. */
bool scan_memory_within(uintptr_t start, uintptr_t end, uintptr_t *cut_start, uintptr_t *cut_end);

#endif
