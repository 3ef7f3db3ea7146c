/* The per-thread aggregates' registry (see thread.h). */
#include "thread.h"

#include <string.h>
#include <x86intrin.h>

#include "arena.h"
#include "live.h"
#include "unwind.h"

/* The list of states; guarded by registry_lock for insertion and walking.
 * A state's own fields are guarded by its own lock. */
static spinlock_t registry_lock = SPINLOCK_INIT;
static struct thread_state *states;
/* Made once, under registry_lock. */
static struct thread_state *shared_state;

/* own_chain: a chain buffer of the state's own, which only the shared
 * state lacks (thread.h, scratch). */
static struct thread_state *make_state(unsigned stack_depth, bool own_chain)
{
    struct thread_state *state = arena_alloc(sizeof(*state));
    if (!state)
        return NULL;
    state->scratch = own_chain ? arena_alloc(UNWIND_BUFFER_SIZE(stack_depth) * sizeof(uintptr_t)) : NULL;
    for (unsigned i = 0; i < PREVIOUS_CHAINS; i++) {
        struct previous_chain *previous = &state->previous[i];
        previous->addrs = arena_alloc(stack_depth * sizeof(*previous->addrs));
        previous->ids = arena_alloc(stack_depth * sizeof(*previous->ids));
        previous->folds = arena_alloc(stack_depth * sizeof(*previous->folds));
        if (!previous->addrs || !previous->ids || !previous->folds)
            return NULL;
    }
    state->bin_peak = arena_alloc(MPROF_BIN_COUNT * sizeof(struct peak_figures));
    if ((own_chain && !state->scratch) || !state->bin_peak)
        return NULL;
    previous_chains_forget(state->previous);
    return state;
}

struct thread_state *thread_state_claim(unsigned stack_depth)
{
    spin_lock(&registry_lock);
    for (struct thread_state *state = states; state; state = state->next) {
        int unclaimed = 0;
        if (state != shared_state && atomic_compare_exchange_strong(&state->claimed, &unclaimed, 1)) {
            spin_unlock(&registry_lock);
            return state;
        }
    }
    struct thread_state *state = make_state(stack_depth, true);
    if (state) {
        state->claimed = 1;
        state->next = states;
        __atomic_store_n(&states, state, __ATOMIC_RELEASE); /* read without the lock: thread_states_newest */
    }
    spin_unlock(&registry_lock);
    return state;
}

void thread_state_release(struct thread_state *state)
{
    spin_lock(&state->lock);
    previous_chains_forget(state->previous); /* the next owner's stack is unrelated */
    spin_unlock(&state->lock);
    atomic_store(&state->claimed, 0);
}

struct thread_state *thread_state_shared(unsigned stack_depth)
{
    spin_lock(&registry_lock);
    if (!shared_state && (shared_state = make_state(stack_depth, false))) {
        shared_state->claimed = 1;
        shared_state->next = states;
        __atomic_store_n(&states, shared_state, __ATOMIC_RELEASE);
    }
    spin_unlock(&registry_lock);
    return shared_state;
}

bool thread_states_each(void (*visit)(struct thread_state *, void *), void *context, bool bounded)
{
    if (!spin_lock_within(&registry_lock, bounded))
        return false;
    bool all = true;
    for (struct thread_state *state = states; state; state = state->next) {
        if (!spin_lock_within(&state->lock, bounded)) {
            all = false;
            continue;
        }
        visit(state, context);
        spin_unlock(&state->lock);
    }
    spin_unlock(&registry_lock);
    return all;
}

bool thread_states_lock_each_within(bool bounded)
{
    if (!spin_lock_within(&registry_lock, bounded))
        return false;
    for (struct thread_state *state = states; state; state = state->next) {
        if (!spin_lock_within(&state->lock, bounded)) {
            for (struct thread_state *locked = states; locked != state; locked = locked->next)
                spin_unlock(&locked->lock);
            spin_unlock(&registry_lock);
            return false;
        }
    }
    return true;
}

void thread_states_lock_each(void)
{
    thread_states_lock_each_within(false);
}

void thread_states_unlock_each(void)
{
    for (struct thread_state *state = states; state; state = state->next)
        spin_unlock(&state->lock);
    spin_unlock(&registry_lock);
}

void thread_states_lock_all(void)
{
    thread_states_lock_all_within(false);
}

bool thread_states_lock_all_within(bool bounded)
{
    if (!spin_lock_within(&live_ledger.lock, bounded))
        return false;
    if (thread_states_lock_each_within(bounded))
        return true;
    spin_unlock(&live_ledger.lock);
    return false;
}

void thread_states_each_held(void (*visit)(struct thread_state *, void *), void *context)
{
    for (struct thread_state *state = states; state; state = state->next)
        visit(state, context);
}

void thread_states_unlock_all(void)
{
    thread_states_unlock_each();
    spin_unlock(&live_ledger.lock);
}

struct thread_state *thread_states_newest(void)
{
    return __atomic_load_n(&states, __ATOMIC_ACQUIRE);
}

void thread_state_retag(struct thread_state *state)
{
    previous_chains_forget(state->previous);
    memset(state->recent_nodes, 0, sizeof state->recent_nodes);
}

void thread_state_stamp_peak(struct thread_state *state)
{
    state->set_tsc = __rdtsc();
    uint64_t everyone = 0;
    /* Other threads' counts, read without their locks: a count of a
     * moment, no more exact than the moment itself. */
    for (struct thread_state *other = thread_states_newest(); other; other = other->next)
        everyone += __atomic_load_n(&other->counters[MPROF_SUM_ALLOCS], __ATOMIC_RELAXED);
    state->set_index = everyone - (state->counters[MPROF_SUM_ALLOCS] - state->set_allocs);
    state->set_pending = false;
}

void thread_states_fork_prepare(void)
{
    thread_states_lock_all();
}

void thread_states_fork_parent(void)
{
    thread_states_unlock_all();
}

void thread_states_fork_child(struct thread_state *survivor)
{
    for (struct thread_state *state = states; state; state = state->next) {
        spin_reset(&state->lock);
        /* The counts' old regions are the parent's pages; dropping them
         * without unmapping keeps fork cheap, and the child never writes
         * to them, so they cost it nothing. */
        memset(state->counters, 0, sizeof state->counters);
        memset(state->bin_allocs, 0, sizeof state->bin_allocs);
        memset(state->bin_frees, 0, sizeof state->bin_frees);
        memset(state->bin_temporaries, 0, sizeof state->bin_temporaries);
        memset(state->bin_peak, 0, MPROF_BIN_COUNT * sizeof(struct peak_figures));
        state->large_bytes = state->large_freed = 0;
        state->last_block = 0;
        state->set_highest = state->set_allocs = state->set_tsc = state->set_index = 0;
        state->set_pending = false;
        state->grant = (struct live_grant){0};
        state->log = (struct live_log){.entries = state->log.entries};
        previous_chains_forget(state->previous);
        memset(state->recent_nodes, 0, sizeof state->recent_nodes);
        state->counts_by_path = NULL;
        state->counts_capacity = 0;
        trace_stream_forget(&state->trace);
        if (state != survivor && state != shared_state)
            atomic_store(&state->claimed, 0);
    }
    spin_reset(&registry_lock);
}
