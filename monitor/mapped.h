/* The memory a program maps itself, counted with its blocks: see
 * mapped.c. */
#ifndef MPROF_MAPPED_H
#define MPROF_MAPPED_H

#include <stdbool.h>
#include <stdint.h>

/* The bytes of the regions mapped now, for the points over time. */
uint64_t mapped_live_bytes(void);

/* The module that defines function is an allocator the monitor counts the
 * blocks of (one that is not glibc's, or a prefixed one): its mappings are
 * its blocks' memory, not the program's own, as glibc's are.  Called while
 * the monitor starts; two at most. */
void mapped_allocator_module(const void *function);

/* The monitor's own library that defines function (libunwind), which
 * maps memory through mmap: its mappings come from the monitor's reserved
 * address space (arena.h), as the monitor's own do.  Called while the
 * monitor starts. */
void mapped_monitor_library(const void *function);

/* Visits every region the program mapped itself and has now, in address
 * order.  locking: as block_map_each's. */
void mapped_each_region(bool locking, void (*visit)(void *context, uintptr_t start, uintptr_t end), void *context);

/* fork(2) must not copy the regions' lock while another thread holds it. */
void mapped_fork_prepare(void);
void mapped_fork_parent(void);
void mapped_fork_child(void);

#endif
