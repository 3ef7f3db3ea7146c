/* The process's mappings as /proc/self/maps lists them, read without the
 * allocator: what the leak scan may read, and what each region is. */
#ifndef MPROF_MEMORY_MAP_H
#define MPROF_MEMORY_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mapping {
    uintptr_t start, end;
    bool readable, writable;
    bool file; /* backed by a file (an inode), not anonymous */
    bool heap; /* [heap], the break's; or another of the allocator's heaps (heap_walk) */
    bool own;  /* the monitor's memory: its arena's reserved space, or the scan's */
    /* Holds glibc's chunks of large blocks, each mapped on its own, and
     * maybe other memory, which the kernel lists as one (heap_walk). */
    bool chunks;
};

struct memory_map {
    struct mapping *mappings; /* in address order, none overlapping */
    size_t count;
    size_t room; /* the bytes mapped for them */
    /* The file's text, kept mapped until released: it is one of the
     * mappings listed, which must all stay as listed while they are read. */
    char *text;
    size_t text_room;
};

/* The kernel lists two adjacent mappings alike as one: each is split where
 * the monitor's own memory begins and ends, so that a mapping is wholly
 * the monitor's or wholly not.  False when the file cannot be read or
 * memory is short. */
bool memory_map_read(struct memory_map *map);
void memory_map_release(struct memory_map *map);
/* The mapping that holds address, or NULL. */
const struct mapping *memory_map_find(const struct memory_map *map, uintptr_t address);

#endif
