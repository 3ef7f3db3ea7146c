/* The return addresses of the program's frames at an allocation. */
#ifndef MPROF_UNWIND_H
#define MPROF_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

/* libunwind's frame and the monitor's wrappers come before the program's. */
#define UNWIND_MAX_SKIPPED 8
/* What a chain buffer for max program frames must hold. */
#define UNWIND_BUFFER_SIZE(max) ((max) + UNWIND_MAX_SKIPPED + 1)

/* One step of a walk: from a frame to its caller's, and the words of the
 * stack it read.  The walk is a function of the registers it starts from,
 * the rules of the code addresses it meets and the words it reads: a later
 * walk that reaches a step's caller state (return address, stack pointer,
 * and the frame pointer where a later step reads it) and finds every word
 * the steps above read still in place would make the same steps again. */
struct walk_step {
    uintptr_t cfa; /* the caller's stack pointer */
    uintptr_t ra;  /* the caller's instruction pointer, read at cfa + the rule's offset; 0 ends the walk */
    uintptr_t bp;  /* the caller's rbp, read at cfa + the rule's offset where the rule says */
    /* The step's rule (cfi.h), its generation bits holding WALK_STEP_
     * flags instead: the steps' generation is the memory's. */
    uint64_t rule;
};
/* The return address is the monitor's, as every one before it. */
#define WALK_STEP_OWN (1u << 4)
/* The next step reloads rbp without reading it first: a later walk joining
 * here may hold another rbp. */
#define WALK_STEP_BP_FREE (2u << 4)

enum walk_end { WALK_END_RULE, WALK_END_ZERO, WALK_END_TRUNCATED };

/* The rules of one thread's recent steps.  A thread allocates from the
 * same code again and again: most steps of a walk find their rule where
 * the previous walk had it at the same step, known before the return
 * address is loaded, so the processor can run ahead of the loads; the
 * others find it by address here (a chain that got one frame longer), or
 * else in the shared cache.  And the steps of the last walk: a new walk
 * that reaches one of its caller states checks the words the steps above
 * read instead of stepping with rules (the paper's 60-75% of a chain
 * unchanged since the thread's last allocation).  Owned by one thread. */
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
    /* steps[current] holds the last walk's last_steps steps (0: none to
     * reuse), innermost first; the other is written by the next walk. */
    struct walk_step *steps[2];
    unsigned step_capacity; /* of each; a longer walk is not kept */
    unsigned current;
    unsigned last_steps;
    unsigned last_max;          /* the max the last walk stopped at */
    enum walk_end last_end;     /* why the last walk stopped */
};

/* The steps' room of a walk memory for chains of up to max frames: arena
 * memory of this size, in two halves. */
#define WALK_STEPS_SIZE(max) (2 * UNWIND_BUFFER_SIZE(max) * sizeof(struct walk_step))
void unwind_memory_init(struct walk_memory *memory, void *steps, unsigned max);
/* The walk memory's thread changes: its stack is another. */
void unwind_memory_forget(struct walk_memory *memory);

/* Stores up to max return addresses in chain, innermost (the allocator's
 * caller) first, without the monitor's own frames; returns how many.  chain
 * holds UNWIND_BUFFER_SIZE(max) entries; it is scratch past the result.
 * *truncated is set when the stack held more.  With memory, the walk uses
 * the cached .eh_frame rules (x86-64), falling back to libunwind where they
 * cannot step; without, libunwind alone. */
unsigned unwind_chain(uintptr_t *chain, unsigned max, struct walk_memory *memory, bool *truncated);

#endif
