/* The monitor's own memory: mmap, never the interposed malloc. */
#ifndef MPROF_ARENA_H
#define MPROF_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct address_range {
    uintptr_t start, end;
};

/* The first of count ranges, by address, that overlaps [start, end):
 * *cut_start and *cut_end its part there; false when none does. */
bool address_range_first_overlap(const struct address_range *ranges, unsigned count, uintptr_t start, uintptr_t end,
                                 uintptr_t *cut_start, uintptr_t *cut_end);

/* The system calls themselves, never the interposed mmap family
 * (mapped.c): the monitor's own memory is not the program's. */
void *system_mmap(void *address, size_t length, int protection, int flags, int fd, long offset);
int system_munmap(void *address, size_t length);
void *system_mremap(void *old, size_t old_length, size_t new_length, int flags, void *new_address);
int system_madvise(void *address, size_t length, int advice);

/* A zeroed region of at least size bytes, or NULL.  Counted in
 * monitor_mapped_bytes().  Regions come from address space the monitor
 * reserved, never from a hole the program made (arena.c). */
void *region_map(size_t size);
/* The same mapped with protection, zeroed or fd's (not -1) from offset:
 * the monitor's own libraries' mappings, files the monitor reads. */
void *region_map_as(size_t size, int protection, int fd, long offset);
/* Whether [start, start + size) is in the address space the monitor
 * reserved. */
bool region_reserved(const void *start, size_t size);
/* The reserved space in [start, end): *cut_start and *cut_end the first
 * such range's part there; false when there is none.  Without the arena's
 * lock, for a caller that stopped the other threads (one may hold it): the
 * reservations are only ever added to. */
bool region_reserved_within(uintptr_t start, uintptr_t end, uintptr_t *cut_start, uintptr_t *cut_end);
void region_unmap(void *region, size_t size);
/* Grow a region made by region_map, keeping its contents; may move it. */
void *region_grow(void *region, size_t old_size, size_t new_size);

/* Gives back the reserved address space not in use: before the program
 * limits its address space (RLIMIT_AS), which counts it.  Later regions
 * come from reservations that fit under the limit. */
void region_release_unused(void);

/* Small zeroed objects that live until the process ends, 16-byte aligned. */
void *arena_alloc(size_t size);

size_t monitor_mapped_bytes(void);

/* fork(2) must not copy the arena lock while another thread holds it. */
void arena_fork_prepare(void);
void arena_fork_parent(void);
void arena_fork_child(void);

#endif
