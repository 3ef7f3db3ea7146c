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
 * thread's figures into the ledger under its lock.
 *
 * A change that would make a new high while other threads run, the latest
 * high before it having been another thread's, does not go through the
 * ledger: every grant is called back, and from then on every thread logs
 * its changes, each stamped with the time-stamp counter, in a
 * log of its own (no shared write), until a thread's log is full or a data
 * file is written.  Then one thread merges every log into the ledger, in
 * the order of the stamps, under every state's lock, and sets the highs and
 * each record's figures at them (peak.h) as if the changes had come one at
 * a time in that order.  When the merge leaves room under the highs, or
 * found one thread's log alone, the threads go back to grants.  So with
 * several threads the peak is exact for the order of the changes' stamps:
 * each thread's own changes in the order it made them, and a block's free
 * after its allocation, whichever threads made them (the allocation is
 * stamped before its block reaches the program, the free after the program
 * gave it back).  With one thread, no grant and no log: every change goes
 * straight into the ledger.
 *
 * At 64 threads: a grant costs nothing shared; a new high costs the
 * call-back of every grant once, when logging starts; a logged change
 * costs a stamp and a store into the thread's own log; every LIVE_LOG_SIZE
 * changes of the busiest thread, one merge takes 64 locks and applies what
 * all logged, in O(log 64) steps a change.
 *
 * Lock order: the ledger's, then the registry's, then the threads' states. */
#ifndef MPROF_LIVE_H
#define MPROF_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "lock.h"
#include "peak.h"

/* A thread's log holds this many changes before it is merged. */
#define LIVE_LOG_SIZE 2048u

struct live_ledger {
    spinlock_t lock; /* guards every field while threads share it */
    /* Set under the lock when a change at the highs follows another
     * thread's high, cleared by a merge that leaves room under the highs or
     * found one log alone; read without the lock by every change that
     * finds no grant. */
    atomic_bool logging;
    /* The state whose change reached the latest high through the ledger:
     * while the same thread alone keeps reaching new highs, its lock is
     * not contended and logs would cost it more than it. */
    const struct thread_state *last_grower;
    int64_t bytes, blocks;
    /* Changed only under the ledger's lock and the setting thread's state's
     * lock: a writer holding every state's lock reads them still. */
    int64_t highest_bytes, highest_blocks;
    int64_t granted_bytes, granted_blocks; /* the grants given and not settled */
    int64_t grants; /* how many threads hold one */
} __attribute__((aligned(64))); /* its own cache line: every thread writes it */

/* The process's one ledger. */
extern struct live_ledger live_ledger;

struct path_counts;

/* A change waiting in a thread's log for the merge. */
struct live_entry {
    uint64_t stamp; /* rdtsc, under the state's lock */
    struct path_counts *counts; /* the path's record, or NULL */
    int64_t bytes;
    int32_t blocks;
    uint32_t bin;
};

/* A thread's log; guarded by its state's lock. */
struct live_log {
    struct live_entry *entries; /* LIVE_LOG_SIZE of them, mapped at the first change logged */
    uint32_t count;
    int64_t bytes, blocks; /* the sums of the entries: live_now reads them from another thread */
};

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

static inline bool live_logging(void)
{
    return atomic_load_explicit(&live_ledger.logging, memory_order_relaxed);
}

/* Appends a change to the thread's log: false when it is full (or cannot be
 * mapped), when the change must go through live_change_settled.  The
 * state's lock held. */
bool live_log_append(struct live_log *log, int64_t bytes, int64_t blocks, struct path_counts *counts, unsigned bin);

/* A change that did not fit the calling thread's grant: through the ledger
 * (true, with what it saw of the peak), or into the thread's log (false:
 * the merge changes counts' and the bin's figures at the peak).  Called
 * with the state's lock held, which it may let go of and take again before
 * anything is changed. */
bool live_change_settled(struct thread_state *state, int64_t bytes, int64_t blocks, struct path_counts *counts,
                         unsigned bin, struct peak_change *change);

/* Merges every thread's log into the ledger, for a writer of a data file:
 * afterwards the highs and the records' figures at them hold every change
 * made so far.  bounded (a signal handler's writer): gives up, merging
 * nothing, rather than wait on a lock its own thread may hold. */
void live_merge_logs(bool bounded);
/* The same with the ledger's lock, the registry's and every state's held
 * (thread_states_lock_all_within). */
void live_merge_logs_held(void);

/* The live figures of about now, every thread's unsettled change added:
 * for the points over time. */
void live_now(uint64_t *bytes, uint64_t *blocks);

/* In a fork child, where the one thread left starts from zero (the
 * parent's lock was taken with every state's, thread_states_lock_all). */
void live_fork_child(void);

#endif
