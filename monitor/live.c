/* The ledger of the live figures (see live.h): what does not fit a grant. */
#include "live.h"

#include "thread.h"

struct live_ledger live_ledger = {.lock = SPINLOCK_INIT};

/* Moves a thread's unsettled change and its grant back into the ledger;
 * both locks held. */
static void settle(struct live_ledger *ledger, struct live_grant *grant)
{
    ledger->bytes += grant->bytes;
    ledger->blocks += grant->blocks;
    if (grant->held) {
        ledger->granted_bytes -= grant->granted_bytes;
        ledger->granted_blocks -= grant->granted_blocks;
        ledger->grants--;
    }
    *grant = (struct live_grant){0};
}

/* Settles every grant (the caller's own is settled already), so that the
 * ledger holds the exact live figures.  A state's held flag only changes
 * under the ledger's lock, so it can be read here without the state's; the
 * list only grows, at its head. */
static void call_back_grants(struct live_ledger *ledger)
{
    for (struct thread_state *state = thread_states_newest(); state && ledger->grants; state = state->next) {
        if (!state->grant.held)
            continue;
        spin_lock(&state->lock);
        settle(ledger, &state->grant);
        spin_unlock(&state->lock);
    }
}

/* Half the room left under the highs, in each figure, to the thread. */
static void give_grant(struct live_ledger *ledger, struct live_grant *grant)
{
    int64_t room_bytes = ledger->highest_bytes - ledger->bytes - ledger->granted_bytes;
    int64_t room_blocks = ledger->highest_blocks - ledger->blocks - ledger->granted_blocks;
    if (room_bytes <= 0 || room_blocks <= 0)
        return;
    *grant = (struct live_grant){.granted_bytes = (room_bytes + 1) / 2, .granted_blocks = (room_blocks + 1) / 2,
                                 .highest = ledger->highest_bytes, .held = true};
    ledger->granted_bytes += grant->granted_bytes;
    ledger->granted_blocks += grant->granted_blocks;
    ledger->grants++;
}

MONITOR_TEXT struct peak_change live_change_settled(struct thread_state *state, int64_t bytes, int64_t blocks)
{
    struct live_ledger *ledger = &live_ledger;
    if (!spin_trylock(&ledger->lock)) {
        /* The ledger's lock comes first: a thread holding it may be
         * waiting for this state's. */
        spin_unlock(&state->lock);
        spin_lock(&ledger->lock);
        spin_lock(&state->lock);
    }
    settle(ledger, &state->grant);
    if (ledger->grants && (ledger->bytes + bytes + ledger->granted_bytes > ledger->highest_bytes ||
                           ledger->blocks + blocks + ledger->granted_blocks > ledger->highest_blocks))
        call_back_grants(ledger);
    struct peak_change change = live_change_ledger(bytes, blocks);
    give_grant(ledger, &state->grant);
    spin_unlock(&ledger->lock);
    return change;
}

void live_now(uint64_t *bytes, uint64_t *blocks)
{
    struct live_ledger *ledger = &live_ledger;
    /* Under the ledger's lock no change moves between a thread and the
     * ledger; the threads' own changes are read as they stand. */
    spin_lock(&ledger->lock);
    int64_t live_bytes = ledger->bytes, live_blocks = ledger->blocks;
    for (struct thread_state *state = thread_states_newest(); state; state = state->next) {
        live_bytes += __atomic_load_n(&state->grant.bytes, __ATOMIC_RELAXED);
        live_blocks += __atomic_load_n(&state->grant.blocks, __ATOMIC_RELAXED);
    }
    spin_unlock(&ledger->lock);
    *bytes = live_bytes > 0 ? (uint64_t)live_bytes : 0;
    *blocks = live_blocks > 0 ? (uint64_t)live_blocks : 0;
}

void live_fork_child(void)
{
    live_ledger = (struct live_ledger){.lock = SPINLOCK_INIT};
}
