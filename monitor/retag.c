/* Retagging the aggregates (see retag.h). */
#include "retag.h"

#include "paths.h"
#include "thread.h"

void retag_range(uintptr_t start, uintptr_t end, unsigned tag)
{
    uintptr_t tag_bits = (uintptr_t)tag << RETAG_SHIFT;
    /* The threads' locks first, as an allocation takes its own before the
     * registry's. */
    thread_states_lock_all();
    paths_retag(start, end, tag_bits);
    for (struct thread_state *state = thread_states_newest(); state; state = state->next)
        thread_state_retag(state);
    thread_states_unlock_all();
}
