/* The live bytes and blocks and their highs, exact with any number of
 * threads, without a shared write on most allocations and frees.
 *
 * The ledger holds the live figures less what each thread has changed and
 * not yet settled.  A thread may change them on its own, under its state's
 * lock only, within a grant: while its unsettled change stays at or under
 * the grant, and every thread's grant, added to the ledger, stays at or
 * under the highs, no change anywhere can make a new high.  A free only
 * lowers the figures, so it always fits; it also leaves the thread room to
 * allocate that much again.  A change that does not fit settles the
 * thread's figures into the ledger under its lock; if the change could then
 * make a new high, every other grant is called back and settled first, so
 * that the ledger is the exact live figures and the new high exact too.  No
 * grant is given while none is left to give: at a new high, every change
 * goes through the ledger until frees make room again.
 *
 * Lock order: the ledger's, then the registry's, then the threads' states. */
#ifndef MPROF_LIVE_H
#define MPROF_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "lock.h"
#include "peak.h"

struct live_ledger {
    spinlock_t lock; /* guards every field while threads share it */
    int64_t bytes, blocks;
    /* Changed only under the ledger's lock and the setting thread's state's
     * lock: a writer holding every state's lock reads them still. */
    int64_t highest_bytes, highest_blocks;
    int64_t granted_bytes, granted_blocks; /* the grants given and not settled */
    int64_t grants; /* how many threads hold one */
} __attribute__((aligned(64))); /* its own cache line: every thread writes it */

/* The process's one ledger. */
extern struct live_ledger live_ledger;

/* A thread's side of it; guarded by its state's lock, and held, granted and
 * highest only change under the ledger's lock too. */
struct live_grant {
    int64_t bytes, blocks;               /* the thread's change not in the ledger */
    int64_t granted_bytes, granted_blocks; /* how far they may grow unsettled */
    int64_t highest;                     /* the highest live bytes while the grant stands */
    bool held;
};

/* A change within the thread's grant: true, with what it saw of the peak,
 * if it fit. */
static inline bool live_change_granted(struct live_grant *grant, int64_t bytes, int64_t blocks,
                                       struct peak_change *change)
{
    if (!grant->held || grant->bytes + bytes > grant->granted_bytes || grant->blocks + blocks > grant->granted_blocks)
        return false;
    /* Stored whole: live_now reads them from another thread. */
    __atomic_store_n(&grant->bytes, grant->bytes + bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&grant->blocks, grant->blocks + blocks, __ATOMIC_RELAXED);
    /* No high can move while a grant stands; live is not known here, and
     * not needed: only a new high is looked at. */
    *change = (struct peak_change){(uint64_t)grant->highest, (uint64_t)grant->highest, 0};
    return true;
}

/* A change straight into the ledger: while one thread runs, with no lock,
 * or under the ledger's lock once no grant can hide a new high. */
static inline struct peak_change live_change_ledger(int64_t bytes, int64_t blocks)
{
    struct live_ledger *ledger = &live_ledger;
    struct peak_change change = {(uint64_t)ledger->highest_bytes, (uint64_t)ledger->highest_bytes,
                                 (uint64_t)(ledger->bytes + bytes)};
    ledger->bytes += bytes;
    ledger->blocks += blocks;
    if (ledger->bytes > ledger->highest_bytes)
        __atomic_store_n(&ledger->highest_bytes, ledger->bytes, __ATOMIC_RELAXED);
    if (ledger->blocks > ledger->highest_blocks)
        __atomic_store_n(&ledger->highest_blocks, ledger->blocks, __ATOMIC_RELAXED);
    change.after = (uint64_t)ledger->highest_bytes;
    return change;
}

struct thread_state;
/* A change that did not fit the calling thread's grant, through the ledger;
 * called with the state's lock held, which it may let go of and take again
 * before anything is changed. */
struct peak_change live_change_settled(struct thread_state *state, int64_t bytes, int64_t blocks);

/* The live figures of about now, every thread's unsettled change added:
 * for the points over time. */
void live_now(uint64_t *bytes, uint64_t *blocks);

/* In a fork child, where the one thread left starts from zero (the
 * parent's lock was taken with every state's, thread_states_lock_all). */
void live_fork_child(void);

#endif
