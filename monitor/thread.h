/* Per-thread aggregates.  Each thread updates only its own state, under its
 * own lock, which nobody else takes except the writer of a data file,
 * fork(2), retagging, and a thread that calls back the grants of the live
 * figures before a new high (live.h): the lock is uncontended on the hot
 * path. */
#ifndef MPROF_THREAD_H
#define MPROF_THREAD_H

#include <stdatomic.h>
#include <stdint.h>

#include "compiler.h"
#include "format.h"
#include "live.h"
#include "lock.h"
#include "entry_table.h"
#include "trace.h"
#include "paths.h"
#include "peak.h"
#include "unwind.h"

/* One thread's figures for one call path. */
struct path_counts {
    uint64_t allocs;
    uint64_t frees;
    uint64_t bytes[MPROF_SIZE_CLASSES];
    uint64_t freed[MPROF_SIZE_CLASSES];
    uint64_t temporaries;
    struct peak_figures peak;
};

/* 2,048 sets of 4 nodes (128 KB a thread, touched as used).  Direct-mapped,
 * two hot nodes of one slot evict each other at every allocation: sqlite3's
 * 2,431 nodes missed 0.4 to 2.6 M lookups (by the layout of the run) in up
 * to 16,384 slots; in sets of 4 they miss none once seen.  cc1plus's
 * 453,000 nodes miss 2.7 M lookups in 512 sets, 1.6 M in 2,048, 1.1 M in
 * 4,096; each miss probes the registry, mostly a load from memory. */
#define RECENT_BITS 11
#define RECENT_WAYS 4

/* A node used lately, with its key: a hit reads the slot, not the node. */
struct recent_node {
    uintptr_t address;
    uint32_t parent;
    uint32_t id; /* 0: empty (the root is never looked up) */
};

/* The previous chain (paper 3.2), outermost first, with the node of each
 * of its paths: ids[i] is the node of the path addrs[0..i], folds[i] a fold
 * of those addresses. */
struct previous_chain {
    uintptr_t *addrs;
    uint32_t *ids;
    uint64_t *folds;
    unsigned depth;
    uint32_t path; /* the id of the whole chain's path, or PATH_NONE */
};
#define PREVIOUS_BLOCKS 0
#define PREVIOUS_OBJECTS 1
#define PREVIOUS_CHAINS 2

/* Forgets the previous chains: the next chain is looked up whole. */
static inline void previous_chains_forget(struct previous_chain *previous)
{
    for (unsigned i = 0; i < PREVIOUS_CHAINS; i++) {
        previous[i].depth = 0;
        previous[i].path = PATH_NONE;
    }
}

/* A region the program mapped itself that a call took some of
 * (mapped.c): freed whole, and what is left of it below and above the cut
 * counted anew at its path. */
struct mapping_cut {
    uint32_t record; /* its path */
    uint32_t call;   /* deferred: the summary field of the call, on its first cut, else MPROF_SUM_FIELD_COUNT */
    uint64_t size;
    uint64_t left[2];
};
#define DEFERRED_CUTS_MAX 16

struct thread_state {
    spinlock_t lock;           /* see above */
    struct thread_state *next; /* registry list; states are reused, never freed */
    atomic_int claimed;        /* 1 while a thread owns the state */

    uint64_t counters[MPROF_SUM_FIELD_COUNT]; /* the max_live ones stay 0: they are global */
    uint64_t bin_allocs[MPROF_BIN_COUNT];
    uint64_t bin_frees[MPROF_BIN_COUNT];
    uint64_t large_bytes; /* bytes allocated and freed in the bin above 1024 */
    uint64_t large_freed;
    uint64_t bin_temporaries[MPROF_BIN_COUNT];
    struct peak_figures *bin_peak; /* MPROF_BIN_COUNT of them */

    /* Temporary allocations (heaptrack's): the block this thread allocated
     * last, until it allocates again or frees it. */
    uintptr_t last_block;
    /* The latest peak this thread set: its maximum, the thread's own
     * allocation count then, and, once stamped (set_pending clear), when
     * (rdtsc) and the process's allocation count. */
    uint64_t set_highest, set_allocs, set_tsc, set_index;
    bool set_pending;
    struct live_grant grant; /* the thread's side of the live figures (live.h) */
    struct live_log log;     /* its changes waiting for a merge (live.h) */

    /* UNWIND_BUFFER_SIZE(stack_depth) entries for the new chain; NULL in
     * the exiting threads' shared state, whose threads may walk at once:
     * each walks into a chain of its own, without the walk memory
     * (record.c). */
    uintptr_t *scratch;
    /* The previous chain of the malloc family's blocks and that of the
     * pools' objects: a program that takes objects from its arena between
     * its mallocs makes them from other places, and each finds its own
     * previous chain again. */
    struct previous_chain previous[PREVIOUS_CHAINS];
    /* Nodes used lately, in sets of RECENT_WAYS chosen by the fold of
     * their path's addresses, checked before the registry: most lookups
     * end here.  The
     * fold needs no earlier lookup, so the processor loads the slots of a
     * chain's frames at once rather than each after its parent's. */
    _Alignas(64) struct recent_node recent_nodes[1u << RECENT_BITS][RECENT_WAYS];
    struct walk_memory walk;

    struct path_counts **counts_by_path; /* by path id; NULL for a path this thread never used */
    uint32_t counts_capacity;

    struct trace_stream trace; /* with MPROF_TRACE */

    /* Written by a signal handler that interrupted the monitor on this
     * thread, claimed first with the thread's deferred_cut_count
     * (monitor.h); read by the monitor when it returns. */
    struct mapping_cut deferred_cuts[DEFERRED_CUTS_MAX];
};

/* The calling thread's state, creating or reusing one; NULL when out of
 * memory.  Called with the thread's recursion guard set. */
struct thread_state *thread_state_claim(unsigned stack_depth);
/* The thread is exiting: its state may be handed to a new thread.  Its
 * counts stay and are added to the file like every other state's. */
void thread_state_release(struct thread_state *state);

/* Visits every state ever made, each under its lock.  bounded: from a
 * signal handler, skipping any state whose lock stays held (the interrupted
 * thread's own); false if one was skipped. */
bool thread_states_each(void (*visit)(struct thread_state *, void *), void *context, bool bounded);

/* The counters of a state that a thread returned early: exiting threads'
 * late frees land here.  Guarded by its own lock like any state. */
struct thread_state *thread_state_shared(unsigned stack_depth);

/* The list's lock and every state's, in the locks' order: for the merge of
 * the live figures' logs (live.h), whose caller holds the ledger's.
 * bounded: from a signal handler, false (holding none) when a lock stays
 * held. */
bool thread_states_lock_each_within(bool bounded);
void thread_states_lock_each(void);
void thread_states_unlock_each(void);
/* Every state's lock, and the list's and the live ledger's before them:
 * for fork(2), for retagging, and for a data file whose figures are all of
 * one moment.  bounded: as thread_states_lock_each_within. */
void thread_states_lock_all(void);
bool thread_states_lock_all_within(bool bounded);
void thread_states_unlock_all(void);
/* Visits every state, their locks held (thread_states_lock_all). */
void thread_states_each_held(void (*visit)(struct thread_state *, void *), void *context);
/* Makes a locked state forget what its caches knew of the old addresses
 * (see paths_retag). */
void thread_state_retag(struct thread_state *state);
/* Stamps the latest peak the locked state set: the time, and the process's
 * allocation count then, as every state counts it now less what this
 * thread allocated since (exact when one thread allocates). */
void thread_state_stamp_peak(struct thread_state *state);
/* The change in the figures at the peak of a path's record (NULL: none)
 * and of a size bin; the state's lock held.  From the allocation or free
 * itself, or from the merge of a log (live.h). */
static inline void thread_state_peak_change(struct thread_state *state, struct path_counts *counts, unsigned bin,
                                            struct peak_change change, int64_t bytes, int64_t blocks)
{
    if (counts)
        peak_record(&counts->peak, change, bytes, blocks);
    peak_record(&state->bin_peak[bin], change, bytes, blocks);
    if (change.after > change.before) {
        /* While the live bytes grow, every allocation is a new peak: when
         * it came is read at the thread's next change that is none. */
        state->set_highest = change.after;
        state->set_allocs = state->counters[MPROF_SUM_ALLOCS];
        state->set_pending = true;
    } else if (unlikely(state->set_pending)) {
        thread_state_stamp_peak(state);
    }
}

/* The newest state, the head of the list of every state: the list only
 * grows, at its head, and states are never freed, so it can be walked
 * without a lock. */
struct thread_state *thread_states_newest(void);

void thread_states_fork_prepare(void);
void thread_states_fork_parent(void);
/* In the child: every state is emptied, and all but the caller's released. */
void thread_states_fork_child(struct thread_state *survivor);

#endif
