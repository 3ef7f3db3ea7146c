/* The return addresses of the program's frames at an allocation. */
#ifndef MPROF_UNWIND_H
#define MPROF_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

/* libunwind's frame and the monitor's wrappers come before the program's. */
#define UNWIND_MAX_SKIPPED 8
/* What a chain buffer for max program frames must hold. */
#define UNWIND_BUFFER_SIZE(max) ((max) + UNWIND_MAX_SKIPPED + 1)

/* Stores up to max return addresses in chain, innermost (the allocator's
 * caller) first, without the monitor's own frames; returns how many.  chain
 * holds UNWIND_BUFFER_SIZE(max) entries; it is scratch past the result.
 * *truncated is set when the stack held more. */
unsigned unwind_chain(uintptr_t *chain, unsigned max, bool *truncated);

#endif
