/* Walking the stack at an allocation (see unwind.h). */
#include "unwind.h"

#include <dlfcn.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "compiler.h"
#include "modules.h"
#include "rules.h"

/* Set by the linker around every function in MONITOR_TEXT. */
extern const char __start_mprof_text[] HIDDEN;
extern const char __stop_mprof_text[] HIDDEN;

static inline bool in_monitor(uintptr_t address)
{
    return address >= (uintptr_t)__start_mprof_text && address < (uintptr_t)__stop_mprof_text;
}

/* libunwind: for the frames the cached rules cannot step through (signal
 * frames, CFA expressions, code without unwind tables). */
MONITOR_TEXT static unsigned walk_with_libunwind(uintptr_t *chain, unsigned max, bool *truncated)
{
    int count = unw_backtrace((void **)chain, (int)UNWIND_BUFFER_SIZE(max));
    int first = 0;
    while (first < count && first < UNWIND_MAX_SKIPPED && !in_monitor(chain[first]))
        first++;
    if (first == count || first == UNWIND_MAX_SKIPPED)
        first = 0; /* no monitor frame seen: keep everything rather than guess */
    while (first < count && in_monitor(chain[first]))
        first++;
    unsigned kept = (unsigned)(count - first);
    *truncated = kept > max;
    if (kept > max)
        kept = max;
    memmove(chain, chain + first, kept * sizeof(uintptr_t));
    /* No rule cache saw these addresses (see rules_fill). */
    if (unlikely(atomic_load_explicit(&modules_watched, memory_order_relaxed)))
        for (unsigned i = 0; i < kept; i++)
            modules_reused(chain[i] - 1);
    return kept;
}

#if defined(__x86_64__) && defined(DLFO_EH_SEGMENT_TYPE)
#define HAVE_RULE_WALK 1

static inline frame_rule rule_by_address(struct walk_memory *memory, const struct rule_table *table,
                                         unsigned generation, uintptr_t address)
{
    /* Code addresses differ in their low bits first. */
    unsigned slot = (unsigned)(address ^ address >> WALK_MEMORY_BITS) & ((1u << WALK_MEMORY_BITS) - 1);
    if (memory->by_address[slot].address != address) {
        memory->by_address[slot].address = address;
        memory->by_address[slot].rule = rules_at(table, generation, address);
    }
    return memory->by_address[slot].rule;
}

/* The same walk libunwind's unw_backtrace makes, with the rule of every
 * return address cached after its first use: a step is a look into the
 * thread's memory of its last walks and two loads.  The stack must grow
 * towards the callers; a rule that says otherwise means the rules are not
 * to be trusted here, and libunwind walks instead. */
MONITOR_TEXT static unsigned walk_with_rules(uintptr_t *chain, unsigned max,
                                             struct walk_memory *memory, bool *truncated)
{
    uintptr_t registers[3]; /* instruction, stack and frame pointers, here */
    __asm__ volatile("lea 0(%%rip), %%rax\n\t"
                     "mov %%rax, 0(%0)\n\t"
                     "mov %%rsp, 8(%0)\n\t"
                     "mov %%rbp, 16(%0)"
                     :
                     : "r"(registers)
                     : "rax", "memory");
    uintptr_t address = registers[0], sp = registers[1], bp = registers[2];
    const struct rule_table *table = atomic_load_explicit(&rules_table, memory_order_acquire);
    unsigned generation = atomic_load_explicit(&rules_generation, memory_order_acquire);
    if (unlikely(memory->generation != generation)) {
        memset(memory->step_address, 0, sizeof memory->step_address);
        memset(memory->by_address, 0, sizeof memory->by_address);
        memory->generation = generation;
    }
    unsigned count = 0;
    bool own_frames = true;
    *truncated = false;
    for (unsigned step = 0;; step++) {
        frame_rule rule;
        if (likely(step < WALK_MEMORY_STEPS && memory->step_address[step] == address)) {
            rule = memory->step_rule[step];
        } else {
            rule = rule_by_address(memory, table, generation, address);
            if (step < WALK_MEMORY_STEPS) {
                memory->step_address[step] = address;
                memory->step_rule[step] = rule;
            }
        }
        if (unlikely(rule_kind(rule) != RULE_STEP)) {
            if (rule_kind(rule) == RULE_END)
                return count;
            return walk_with_libunwind(chain, max, truncated);
        }
        uintptr_t cfa = (rule_cfa_from_bp(rule) ? bp : sp) + (uintptr_t)rule_cfa_offset(rule);
        if (unlikely(cfa <= sp))
            return walk_with_libunwind(chain, max, truncated);
        uintptr_t return_address = *(const uintptr_t *)(cfa + (uintptr_t)rule_ra_offset(rule));
        if (rule_bp_saved(rule))
            bp = *(const uintptr_t *)(cfa + (uintptr_t)rule_bp_offset(rule));
        sp = cfa;
        if (unlikely(!return_address))
            return count;
        if (unlikely(own_frames)) {
            if (in_monitor(return_address)) {
                address = return_address - 1;
                continue;
            }
            own_frames = false;
        }
        if (unlikely(count == max)) {
            *truncated = true;
            return count;
        }
        chain[count++] = return_address;
        /* Inside the call instruction: a call can be the last instruction
         * of a function, and its return address the next function's. */
        address = return_address - 1;
    }
}
#endif

MONITOR_TEXT unsigned unwind_chain(uintptr_t *chain, unsigned max, struct walk_memory *memory,
                                  bool *truncated)
{
#ifdef HAVE_RULE_WALK
    if (likely(memory))
        return walk_with_rules(chain, max, memory, truncated);
#else
    (void)memory;
#endif
    return walk_with_libunwind(chain, max, truncated);
}
