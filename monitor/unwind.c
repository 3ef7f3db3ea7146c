/* Walking the stack at an allocation (see unwind.h). */
#include "unwind.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
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

/* The instruction, stack and frame pointers where it is written: a macro,
 * so that they are the walking function's own. */
#define HERE(address, sp, bp)                                                                                  \
    do {                                                                                                       \
        uintptr_t registers_[3];                                                                               \
        __asm__ volatile("lea 0(%%rip), %%rax\n\t"                                                              \
                         "mov %%rax, 0(%0)\n\t"                                                                 \
                         "mov %%rsp, 8(%0)\n\t"                                                                 \
                         "mov %%rbp, 16(%0)"                                                                   \
                         :                                                                                     \
                         : "r"(registers_)                                                                     \
                         : "rax", "memory");                                                                   \
        (address) = registers_[0], (sp) = registers_[1], (bp) = registers_[2];                                 \
    } while (0)

static inline uint32_t slot_of(uintptr_t address)
{
    /* Code addresses differ in their low bits first. */
    return (uint32_t)(address ^ address >> WALK_MEMORY_BITS) & ((1u << WALK_MEMORY_BITS) - 1);
}

/* The entry of address, filled from the shared cache when its slot held
 * another address. */
static inline struct walk_entry *entry_by_address(struct walk_memory *memory, const struct rule_table *table,
                                                  unsigned generation, uintptr_t address)
{
    struct walk_entry *entry = &memory->entries[slot_of(address)];
    if (entry->address != address) {
        entry->address = address;
        entry->rule = rules_at(table, generation, address);
    }
    return entry;
}

/* One step from a frame to its caller's by its rule: the caller's return
 * address (0 at the outermost frame), sp and bp its frame's.  False where
 * the rule cannot step (libunwind must). */
static inline bool step_by_rule(frame_rule rule, uintptr_t *sp, uintptr_t *bp, uintptr_t *return_address)
{
    if (unlikely(rule_kind(rule) != RULE_STEP)) {
        *return_address = 0;
        return rule_kind(rule) == RULE_END;
    }
    uintptr_t cfa = (rule_cfa_from_bp(rule) ? *bp : *sp) + (uintptr_t)rule_cfa_offset(rule);
    if (unlikely(cfa <= *sp))
        return false;
    *return_address = *(const uintptr_t *)(cfa + (uintptr_t)rule_ra_offset(rule));
    if (rule_bp_saved(rule))
        *bp = *(const uintptr_t *)(cfa + (uintptr_t)rule_bp_offset(rule));
    *sp = cfa;
    return true;
}

/* The entry of the frame two steps out from previous, whose code address
 * is address; previous learns it. */
static inline struct walk_entry *entry_beyond(struct walk_memory *memory, const struct rule_table *table,
                                              unsigned generation, struct walk_entry *previous,
                                              uintptr_t address)
{
    struct walk_entry *entry = previous->beyond;
    if (unlikely(entry->address != address)) {
        entry = entry_by_address(memory, table, generation, address);
        previous->beyond = entry;
    }
    return entry;
}

/* The same walk libunwind's unw_backtrace makes, with the rule of every
 * return address cached after its first use: a step is a look into the
 * thread's memory of its last walks (the entry named by the entry two
 * steps in, else by address) and two loads.  The stack must grow towards
 * the callers; a rule that says otherwise means the rules are not to be
 * trusted here, and libunwind walks instead. */
MONITOR_TEXT static unsigned walk_with_rules(uintptr_t *chain, unsigned max,
                                             struct walk_memory *memory, bool *truncated)
{
    uintptr_t address, sp, bp;
    HERE(address, sp, bp);
    const struct rule_table *table = atomic_load_explicit(&rules_table, memory_order_acquire);
    unsigned generation = atomic_load_explicit(&rules_generation, memory_order_acquire);
    if (unlikely(memory->generation != generation + 1)) {
        for (unsigned i = 0; i < 1u << WALK_MEMORY_BITS; i++)
            memory->entries[i] = (struct walk_entry){.beyond = &memory->entries[0]};
        memory->start = (struct walk_entry){.beyond = &memory->entries[0]};
        memory->generation = generation + 1;
    }
    unsigned count = 0;
    *truncated = false;
    struct walk_entry *previous = &memory->start;
    struct walk_entry *entry = entry_by_address(memory, table, generation, address);
    uintptr_t return_address;
    /* The monitor's own frames, up to the first of the program's. */
    for (;;) {
        if (unlikely(!step_by_rule(entry->rule, &sp, &bp, &return_address)))
            return walk_with_libunwind(chain, max, truncated);
        if (unlikely(!return_address))
            return count;
        /* Inside the call instruction: a call can be the last instruction
         * of a function, and its return address the next function's. */
        address = return_address - 1;
        struct walk_entry *next = entry_beyond(memory, table, generation, previous, address);
        previous = entry;
        entry = next;
        if (!in_monitor(return_address))
            break;
    }
    for (;;) {
        if (unlikely(count == max)) {
            *truncated = true;
            return count;
        }
        chain[count++] = return_address;
        if (unlikely(!step_by_rule(entry->rule, &sp, &bp, &return_address)))
            return walk_with_libunwind(chain, max, truncated);
        if (unlikely(!return_address))
            return count;
        address = return_address - 1;
        struct walk_entry *next = entry_beyond(memory, table, generation, previous, address);
        previous = entry;
        entry = next;
    }
}
#endif

/* The base of the module that holds address, or NULL. */
static const void *module_base(const void *address)
{
    Dl_info module;
    return dladdr(address, &module) ? module.dli_fbase : NULL;
}

/* A step out of a frame with no rule (the C runtime's start-up and
 * finalisation code, built without unwind tables), by the frame pointer it
 * keeps: the caller's frame pointer and the return address just above
 * it.  False where that cannot be so. */
static bool step_by_frame_pointer(uintptr_t *sp, uintptr_t *bp, uintptr_t *return_address)
{
    if (*bp < *sp || *bp - *sp > (1u << 20) || *bp % 8)
        return false;
    *return_address = ((const uintptr_t *)*bp)[1];
    if (!*return_address || !module_base((const void *)(*return_address - 1)))
        return false;
    *sp = *bp + 16;
    *bp = ((const uintptr_t *)*bp)[0];
    return true;
}

/* The frames are stepped by the rules of .eh_frame, not by libunwind,
 * whose checks of the addresses it reads write to a pipe it opens: two
 * descriptors, 0 and 1 in a program that closed its standard ones. */
uintptr_t unwind_program_stack(void)
{
#ifdef HAVE_RULE_WALK
    /* The C library, the dynamic loader (whose _dl_fini runs a library's
     * exit handlers) and the monitor's own library: their frames are the
     * exit path.  Linked into the program, the monitor's frames are the
     * program's module: they come before the first of the others. */
    const void *system[] = {module_base((const void *)exit), module_base((const void *)&_r_debug),
                            module_base((const void *)unwind_program_stack)};
    uintptr_t address, sp, bp;
    HERE(address, sp, bp);
    bool past_system = false;
    for (unsigned depth = 0; system[0] && depth < 64; depth++) {
        uintptr_t return_address;
        frame_rule rule = cfi_rule_at(address);
        if (rule_kind(rule) == RULE_UNKNOWN && !step_by_frame_pointer(&sp, &bp, &return_address))
            return 0;
        if (rule_kind(rule) != RULE_UNKNOWN && (!step_by_rule(rule, &sp, &bp, &return_address) || !return_address))
            return 0;
        /* sp is now the caller's, as it made the call. */
        const void *base = module_base((const void *)(return_address - 1));
        if (base && (base == system[0] || base == system[1] || base == system[2]))
            past_system = true;
        else if (past_system)
            return sp;
        address = return_address - 1;
    }
#endif
    return 0;
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

const void *unwind_library_function(void)
{
    return (const void *)unw_backtrace;
}
