/* The return addresses of the program's frames at an allocation. */
#ifndef MPROF_UNWIND_H
#define MPROF_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

/* libunwind's frame and the monitor's wrappers come before the program's. */
#define UNWIND_MAX_SKIPPED 8
/* What a chain buffer for max program frames must hold. */
#define UNWIND_BUFFER_SIZE(max) ((max) + UNWIND_MAX_SKIPPED + 1)

/* The rules of the previous walk's steps, by position: allocations in a
 * row mostly come from the same code, so most steps find their rule here,
 * without a probe of the shared cache.  Owned by one thread. */
#define WALK_MEMORY_STEPS 64
struct walk_memory {
    unsigned generation; /* of the rules cache when these were read */
    uintptr_t address[WALK_MEMORY_STEPS];
    uint64_t rule[WALK_MEMORY_STEPS];
};

/* Stores up to max return addresses in chain, innermost (the allocator's
 * caller) first, without the monitor's own frames; returns how many.  chain
 * holds UNWIND_BUFFER_SIZE(max) entries; it is scratch past the result.
 * *truncated is set when the stack held more.  With memory, the walk uses
 * the cached .eh_frame rules (x86-64), falling back to libunwind where they
 * cannot step; without, libunwind alone. */
unsigned unwind_chain(uintptr_t *chain, unsigned max, struct walk_memory *memory, bool *truncated);

#endif
