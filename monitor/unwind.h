/* The return addresses of the program's frames at an allocation. */
#ifndef MPROF_UNWIND_H
#define MPROF_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

/* libunwind's frame and the monitor's wrappers come before the program's. */
#define UNWIND_MAX_SKIPPED 8
/* What a chain buffer for max program frames must hold. */
#define UNWIND_BUFFER_SIZE(max) ((max) + UNWIND_MAX_SKIPPED + 1)

/* The rules of one thread's recent steps, by return address (direct
 * mapped), each with the entry the walk took last two steps further out.
 * A thread allocates from the same code again and again: most steps find
 * their rule in the entry named by the entry two steps in, known before
 * the return address is loaded, so the processor can run ahead of the
 * loads, two chains of them at once; a chain that differs from the last
 * one at some frame (sqlite3's many callers of one allocating function,
 * at every depth) misses there and at the next step alone, and is back in
 * step above them, whatever its depth.  The others find their rule by
 * address here, or else in the shared cache.  Owned by one thread.
 * 1,024 entries (24 KB a thread): with 512, sqlite3's and python3's
 * return addresses evicted each other often enough to cost 4-8% of their
 * run (1.69x -> 1.55x and 1.29x -> 1.23x in 5 interleaved rounds). */
#define WALK_MEMORY_BITS 10
struct walk_entry {
    uintptr_t address; /* 0: empty */
    uint64_t rule;
    /* The entry the walk took two steps after this one, last time: a
     * pointer, so that finding it is a single load. */
    struct walk_entry *beyond;
};
struct walk_memory {
    unsigned generation; /* 1 + that of the rules cache when these were read; 0: never */
    struct walk_entry start; /* the step before the walk's first: its beyond is the second's */
    struct walk_entry entries[1u << WALK_MEMORY_BITS];
};

/* Stores up to max return addresses in chain, innermost (the allocator's
 * caller) first, without the monitor's own frames; returns how many.  chain
 * holds UNWIND_BUFFER_SIZE(max) entries; it is scratch past the result.
 * *truncated is set when the stack held more.  With memory, the walk uses
 * the cached .eh_frame rules (x86-64), falling back to libunwind where they
 * cannot step; without, libunwind alone. */
unsigned unwind_chain(uintptr_t *chain, unsigned max, struct walk_memory *memory, bool *truncated);

/* Called from a handler the C library runs (an atexit handler): the stack
 * pointer of the first frame outside the C library beyond the caller's,
 * where the program's own frames start above the library's exit path
 * (exit, the handlers' loop); 0 when the walk does not reach one. */
uintptr_t unwind_program_stack(void);

/* A function of libunwind's, to find the library by. */
const void *unwind_library_function(void);

#endif
