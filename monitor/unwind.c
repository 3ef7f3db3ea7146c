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
 * to be trusted here, and libunwind walks instead.
 *
 * Every step is kept.  Once a step arrives at a caller state the last walk
 * had (same stack pointer, return address and, unless the next step
 * reloads it unread, rbp), the last walk's steps above it are replayed:
 * each word they read is read again and compared, nothing else.  Equal
 * words from an equal state make equal steps, so the chain is the one the
 * rules would give; the first word that differs (a frame returned and
 * another call landed at the same address) ends the replay, and the rules
 * walk on from the state reached, which is exact too. */
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
        memory->last_steps = 0; /* its rules may have changed */
    }
    if (unlikely(memory->last_max != max)) {
        memory->last_steps = 0; /* it stopped at another depth */
        memory->last_max = max;
    }
    const struct walk_step *last = memory->steps[memory->current];
    unsigned last_steps = memory->last_steps;
    struct walk_step *next = memory->steps[memory->current ^ 1];
    unsigned capacity = memory->step_capacity;
    memory->last_steps = 0; /* until this walk ends with its steps kept */
    unsigned count = 0, step = 0, seen = 0; /* seen: last's steps below this caller state */
    enum walk_end end;
    bool own_frames = true, joined = false;
    *truncated = false;
    for (;;) {
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
            if (rule_kind(rule) == RULE_END) {
                end = WALK_END_RULE;
                break;
            }
            return walk_with_libunwind(chain, max, truncated);
        }
        uintptr_t cfa = (rule_cfa_from_bp(rule) ? bp : sp) + (uintptr_t)rule_cfa_offset(rule);
        if (unlikely(cfa <= sp))
            return walk_with_libunwind(chain, max, truncated);
        uintptr_t return_address = *(const uintptr_t *)(cfa + (uintptr_t)rule_ra_offset(rule));
        if (rule_bp_saved(rule))
            bp = *(const uintptr_t *)(cfa + (uintptr_t)rule_bp_offset(rule));
        sp = cfa;
        bool own = own_frames && return_address && in_monitor(return_address);
        if (likely(step < capacity)) {
            if (step && !rule_cfa_from_bp(rule) && rule_bp_saved(rule))
                next[step - 1].rule |= WALK_STEP_BP_FREE;
            next[step] = (struct walk_step){cfa, return_address, bp,
                                            rule_with_generation(rule, 0) | (own ? WALK_STEP_OWN : 0)};
        }
        step++;
        if (unlikely(!return_address)) {
            end = WALK_END_ZERO;
            break;
        }
        /* Inside the call instruction: a call can be the last instruction
         * of a function, and its return address the next function's. */
        address = return_address - 1;
        if (unlikely(own_frames)) {
            if (own)
                continue;
            own_frames = false;
        }
        if (unlikely(count == max)) {
            *truncated = true;
            end = WALK_END_TRUNCATED;
            break;
        }
        chain[count++] = return_address;
        if (joined)
            continue;

        /* The last walk's steps come outermost last: their stack pointers
         * only grow. */
        while (seen < last_steps && last[seen].cfa < cfa)
            seen++;
        if (seen == last_steps || last[seen].cfa != cfa || last[seen].ra != return_address ||
            (last[seen].rule & WALK_STEP_OWN) ||
            (last[seen].bp != bp && !(last[seen].rule & WALK_STEP_BP_FREE)))
            continue;
        /* Replayed steps are only read here; they are copied at once
         * below, which costs fewer stores than step by step. */
        joined = true;
        unsigned first = ++seen, first_step = step;
        bool stopped = false;
        for (; seen < last_steps; seen++) {
            const struct walk_step *old = &last[seen];
            if (*(const uintptr_t *)(old->cfa + (uintptr_t)rule_ra_offset(old->rule)) != old->ra ||
                (rule_bp_saved(old->rule) &&
                 *(const uintptr_t *)(old->cfa + (uintptr_t)rule_bp_offset(old->rule)) != old->bp))
                break; /* the rules step from here: the state is this walk's own */
            step++;
            sp = old->cfa;
            bp = old->bp;
            if (!old->ra) {
                end = WALK_END_ZERO;
                stopped = true;
                break;
            }
            if (unlikely(count == max)) {
                *truncated = true;
                end = WALK_END_TRUNCATED;
                stopped = true;
                break;
            }
            chain[count++] = old->ra;
            address = old->ra - 1;
        }
        /* Replayed steps are only read above, and copied here at once:
         * fewer stores than step by step. */
        if (likely(step <= capacity))
            memcpy(next + first_step, last + first, (step - first_step) * sizeof(struct walk_step));
        if (stopped)
            goto done;
        if (seen < last_steps)
            continue; /* a word differed */
        if (memory->last_end == WALK_END_RULE) {
            end = WALK_END_RULE; /* the rule at address is the outermost frame's */
            break;
        }
        /* The last walk stopped at max, and this one has room for more. */
    }
done:
    if (step <= capacity) {
        memory->current ^= 1;
        memory->last_steps = step;
        memory->last_end = end;
    }
    return count;
}
#endif

void unwind_memory_init(struct walk_memory *memory, void *steps, unsigned max)
{
    memory->step_capacity = UNWIND_BUFFER_SIZE(max);
    memory->steps[0] = steps;
    memory->steps[1] = memory->steps[0] + memory->step_capacity;
    memory->last_steps = 0;
}

void unwind_memory_forget(struct walk_memory *memory)
{
    memory->last_steps = 0;
}

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
