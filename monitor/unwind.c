#include "unwind.h"

#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "compiler.h"

/* Set by the linker around every function in MONITOR_TEXT. */
extern const char __start_mprof_text[] HIDDEN;
extern const char __stop_mprof_text[] HIDDEN;

static inline bool in_monitor(uintptr_t address)
{
    return address >= (uintptr_t)__start_mprof_text && address < (uintptr_t)__stop_mprof_text;
}

MONITOR_TEXT unsigned unwind_chain(uintptr_t *chain, unsigned max, bool *truncated)
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
    return kept;
}
