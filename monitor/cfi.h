/* How to step from a frame to its caller's, read from the .eh_frame call
 * frame information the compiler wrote, and packed in one word so that a
 * rule can be cached and read atomically.  x86-64 only: the three
 * registers a walk of return addresses needs are the instruction pointer,
 * the stack pointer and the frame pointer. */
#ifndef MPROF_CFI_H
#define MPROF_CFI_H

#include <stdint.h>

typedef uint64_t frame_rule;

enum frame_rule_kind {
    RULE_NONE = 0,    /* never computed */
    RULE_STEP = 1,    /* the fields below say how to reach the caller */
    RULE_END = 2,     /* the outermost frame: the return address is undefined */
    RULE_UNKNOWN = 3, /* no information, or more than this packing can say */
};

/* Layout: kind 2 bits, CFA based on rbp 1, rbp saved 1, generation 12,
 * return address offset from the CFA int8, saved rbp offset int16, CFA
 * offset from its base register int24. */
#define RULE_GENERATION_BITS 12
#define RULE_GENERATION_MASK ((1u << RULE_GENERATION_BITS) - 1)

static inline enum frame_rule_kind rule_kind(frame_rule rule)
{
    return (enum frame_rule_kind)(rule & 3);
}

static inline int rule_cfa_from_bp(frame_rule rule)
{
    return (rule >> 2) & 1;
}

static inline int rule_bp_saved(frame_rule rule)
{
    return (rule >> 3) & 1;
}

static inline unsigned rule_generation(frame_rule rule)
{
    return (rule >> 4) & RULE_GENERATION_MASK;
}

static inline int64_t rule_ra_offset(frame_rule rule)
{
    return (int8_t)(rule >> 16);
}

static inline int64_t rule_bp_offset(frame_rule rule)
{
    return (int16_t)(rule >> 24);
}

static inline int64_t rule_cfa_offset(frame_rule rule)
{
    return (int64_t)rule >> 40;
}

static inline frame_rule rule_with_generation(frame_rule rule, unsigned generation)
{
    return (rule & ~((frame_rule)RULE_GENERATION_MASK << 4)) |
           (frame_rule)(generation & RULE_GENERATION_MASK) << 4;
}

/* The rule at code address (for a caller's frame: its return address minus
 * one, which lies inside the call), generation 0.  Reads only memory the
 * dynamic loader mapped, takes no lock and never allocates. */
frame_rule cfi_rule_at(uintptr_t address);

#endif
