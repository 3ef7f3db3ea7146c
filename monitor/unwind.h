/* The return addresses of the program's frames at an allocation. */
#ifndef MPROF_UNWIND_H
#define MPROF_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

/* libunwind's frame and the monitor's wrappers come before the program's. */
#define UNWIND_MAX_SKIPPED 8
/* What a chain buffer for max program frames must hold. */
#define UNWIND_BUFFER_SIZE(max) ((max) + UNWIND_MAX_SKIPPED + 1)

/* The rules of one thread's recent steps.  A thread allocates from the
 * same code again and again: most steps of a walk find their rule where
 * the previous walk had it at the same step, known before the return
 * address is loaded, so the processor can run ahead of the loads; the
 * others find it by address here (a chain that got one frame longer), or
 * else in the shared cache.  Owned by one thread. */
#define WALK_MEMORY_STEPS 64
#define WALK_MEMORY_BITS 8
struct walk_memory {
    unsigned generation; /* of the rules cache when these were read */
    uintptr_t step_address[WALK_MEMORY_STEPS];
    uint64_t step_rule[WALK_MEMORY_STEPS];
    struct {
        uintptr_t address;
        uint64_t rule;
    } by_address[1u << WALK_MEMORY_BITS];
};

/* Stores up to max return addresses in chain, innermost (the allocator's
 * caller) first, without the monitor's own frames; returns how many.  chain
 * holds UNWIND_BUFFER_SIZE(max) entries; it is scratch past the result.
 * *truncated is set when the stack held more.  With memory, the walk uses
 * the cached .eh_frame rules (x86-64), falling back to libunwind where they
 * cannot step; without, libunwind alone. */
unsigned unwind_chain(uintptr_t *chain, unsigned max, struct walk_memory *memory, bool *truncated);

#endif
