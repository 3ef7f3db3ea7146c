/* The hot path: what happens on every allocation and free. */
#include <stdatomic.h>
#include <string.h>

#include "arena.h"
#include "block_table.h"
#include "checkpoint.h"
#include "header.h"
#include "leak_scan.h"
#include "monitor.h"
#include "real.h"
#include "paths.h"
#include "unwind.h"
#include "state.h"
#include "timeline.h"
#include "trace.h"
#include "watch.h"

/* The memory over time is looked at every this many allocations of a
 * thread, and at every block this large, which may change it at once. */
#define TIMELINE_TICK_EVERY 64u
#define TIMELINE_LARGE_BLOCK (UINT64_C(64) << 10)

static inline unsigned size_class(uint64_t size)
{
    return (size > MPROF_CLASS_S_MAX) + (size > MPROF_CLASS_M_MAX) + (size > MPROF_CLASS_L_MAX);
}

static inline unsigned bin_of(uint64_t size)
{
    return size < MPROF_BIN_LARGE ? (unsigned)size : MPROF_BIN_LARGE;
}

/* One thread alone cannot race itself: no locked instruction until a
 * second thread is started. */
static inline bool threads_share(void)
{
    return atomic_load_explicit(&monitor.threads_started, memory_order_relaxed);
}

/* The thread's own lock.  Others take it (the writer of a data file, fork,
 * retagging, the live figures' grants) only from another thread, or from
 * a signal handler on this one; threads_started is set before a second
 * thread exists (by the thread that creates it, or by a thread made some
 * other way at its first allocation, before it takes any lock), and
 * states_read_elsewhere before a thread of the monitor's reads them. */
static inline void lock_own(struct thread_state *state)
{
    if (likely(!threads_share() && !atomic_load_explicit(&monitor.states_read_elsewhere, memory_order_relaxed)))
        spin_lock_alone(&state->lock);
    else
        spin_lock(&state->lock);
}

/* A block of size bytes goes live (bytes and blocks positive) or is freed
 * (negative): the process's live figures change (live.h).  Called with the
 * thread's lock held, which the ledger may let go of and take again: so
 * before any of the state's figures change.  False when the change was
 * logged: the merge changes the figures at the peak of counts and bin;
 * else the caller does (thread_state_peak_change), with *change. */
static inline bool live_change(struct thread_state *state, int64_t bytes, int64_t blocks,
                               struct path_counts *counts, unsigned bin, struct peak_change *change)
{
    if (likely(!threads_share())) {
        *change = live_change_ledger(bytes, blocks);
        return true;
    }
    if (likely(live_change_granted(&state->grant, bytes, blocks, change)))
        return true;
    if (live_logging() && live_log_append(&state->log, bytes, blocks, counts, bin))
        return false;
    return live_change_settled(state, bytes, blocks, counts, bin, change);
}

static void apply_deferred(struct monitor_tls *tls);
static void apply_deferred_cuts(struct monitor_tls *tls);

/* Every recording function ends here: the frees and the regions' cuts
 * that signal handlers deferred meanwhile are applied while the guard is
 * still up. */
static inline void leave(struct monitor_tls *tls)
{
    if (unlikely(atomic_load_explicit(&tls->deferred_count, memory_order_acquire)))
        apply_deferred(tls);
    if (unlikely(atomic_load_explicit(&tls->deferred_cut_count, memory_order_acquire)))
        apply_deferred_cuts(tls);
    tls->busy = 0;
}

static inline struct thread_state *current_state(void)
{
    struct thread_state *state = monitor_tls.state;
    if (likely(state))
        return state;
    return monitor_claim_state();
}

/* A recent-node miss loads the registry's slots of this many frames
 * further in at once: where one node is missing, those below it mostly
 * are too (all of them when it is new). */
#define PREFETCH_AHEAD 8u

/* Where a chain's registry slots were loaded ahead: up to frame index
 * (from the outermost), whose path folds to fold. */
struct ahead {
    unsigned index;
    uint64_t fold;
};

/* The node of address called from the path parent, whose addresses fold
 * to folded, frame i of chain (depth frames, innermost first); PATH_NONE
 * when out of memory. */
MONITOR_TEXT_INLINE static uint32_t find_node(struct thread_state *state, uint32_t parent, uintptr_t address,
                                              uint64_t folded, const uintptr_t *chain, unsigned i,
                                              unsigned depth, struct ahead *ahead)
{
    struct recent_node *set = state->recent_nodes[folded >> (64 - RECENT_BITS)];
    for (unsigned way = 0; way < RECENT_WAYS; way++)
        if (likely(set[way].address == address && set[way].parent == parent && set[way].id))
            return set[way].id;
    if (ahead->index <= i)
        *ahead = (struct ahead){i, folded};
    while (ahead->index + 1 < depth && ahead->index < i + PREFETCH_AHEAD) {
        ahead->index++;
        ahead->fold = fold_word(ahead->fold, chain[depth - 1 - ahead->index]);
        paths_prefetch(ahead->fold);
    }
    uint32_t id = paths_node_id(parent, address, folded, &monitor.threads_started);
    if (id != PATH_NONE) {
        /* First in, first out: the set's oldest node goes. */
        memmove(&set[1], &set[0], (RECENT_WAYS - 1) * sizeof(*set));
        set[0] = (struct recent_node){.address = address, .parent = parent, .id = id};
    }
    return id;
}

/* The path of chain (innermost first), the paper's way (3.2): compared
 * with the previous chain from the outermost frame in, the nodes of the
 * common part are already at hand, and only the rest is looked up.
 * PATH_NONE when out of memory. */
MONITOR_TEXT_INLINE static uint32_t path_of_chain(struct thread_state *state, struct previous_chain *previous,
                                                  const uintptr_t *chain, unsigned depth)
{
    unsigned common = 0;
    unsigned before = previous->depth;
    while (common < depth && common < before && previous->addrs[common] == chain[depth - 1 - common])
        common++;
    if (likely(common == depth && depth == before && previous->path != PATH_NONE))
        return previous->path;
    uint32_t node = common ? previous->ids[common - 1] : paths_root();
    uint64_t folded = common ? previous->folds[common - 1] : PATHS_FOLD_SEED;
    struct ahead ahead = {0, 0}; /* set at the first miss */
    for (unsigned i = common; i < depth; i++) {
        uintptr_t address = chain[depth - 1 - i];
        folded = fold_word(folded, address);
        node = find_node(state, node, address, folded, chain, i, depth, &ahead);
        if (unlikely(node == PATH_NONE)) {
            previous->depth = i;
            previous->path = PATH_NONE;
            return PATH_NONE;
        }
        previous->addrs[i] = address;
        previous->ids[i] = node;
        previous->folds[i] = folded;
    }
    previous->depth = depth;
    /* The empty chain (no frame unwound) ends at the root itself. */
    previous->path = paths_path_of_id(node);
    return previous->path;
}

/* The thread's counts of path, made on first use; NULL when out of memory
 * or no path's. */
MONITOR_TEXT_INLINE static struct path_counts *counts_of(struct thread_state *state, uint32_t path)
{
    if (likely(path < state->counts_capacity && state->counts_by_path[path]))
        return state->counts_by_path[path];
    /* No path of the monitor's: a header the program wrote over. */
    if (unlikely(path >= PATH_ID_LIMIT))
        return NULL;
    if (path >= state->counts_capacity) {
        uint32_t capacity = state->counts_capacity ? state->counts_capacity : 1024;
        while (capacity <= path)
            capacity *= 2;
        size_t old_size = state->counts_capacity * sizeof(*state->counts_by_path);
        size_t new_size = capacity * sizeof(*state->counts_by_path);
        void *grown = state->counts_by_path ? region_grow(state->counts_by_path, old_size, new_size)
                                            : region_map(new_size);
        if (!grown)
            return NULL;
        state->counts_by_path = grown;
        state->counts_capacity = capacity;
    }
    struct path_counts *counts = arena_alloc(sizeof(*counts));
    if (counts)
        state->counts_by_path[path] = counts;
    return counts;
}

/* The trace's event for a block the thread's lock holder just counted:
 * an allocation, or the second half of a realloc (monitor_released). */
static void trace_allocated(struct monitor_tls *tls, struct thread_state *state, void *block, size_t size,
                            enum mprof_summary_field field, uint32_t path)
{
    uint32_t entry = path - paths_first_own_path() + 1; /* the PATH section's index + 1 */
    uint64_t sequence = trace_sequence();
    if (tls->trace_realloc_sequence)
        trace_realloc(&state->trace, tls->trace_realloc_sequence, sequence - tls->trace_realloc_sequence, size,
                      leak_hidden(tls->trace_realloc_from), (uintptr_t)block, entry);
    else
        trace_allocation(&state->trace, sequence, field, size, tls->trace_alignment, (uintptr_t)block, entry);
}

/* Puts a pool's object into its table; the thread's lock held, which
 * comes before the table's.  Alone, the table's lock is taken as the
 * thread's own is (lock_own). */
static inline bool table_put(struct block_table *objects, void *block, size_t size, uint32_t path, bool *replaced)
{
    uintptr_t pointer = (uintptr_t)block;
    if (likely(!threads_share()))
        spin_lock_alone(&objects->lock);
    else
        spin_lock(&objects->lock);
    bool put = block_table_insert(objects, block_table_hash(pointer),
                                  (struct block_entry){pointer, kind_pack(size, path)}, true, replaced);
    spin_unlock(&objects->lock);
    return put;
}

/* A pool's backing block (pools.h): kept with BACKING_RECORD, so that its
 * free is known as one, and counted apart from every figure.  The guard is
 * up, and let down at the end. */
MONITOR_TEXT static void count_backing(struct monitor_tls *tls, struct thread_state *state, void *block, size_t size,
                                       enum mprof_summary_field field, bool headed)
{
    tls->backing &= ~1u;
    bool replaced = false;
    lock_own(state);
    if (headed)
        header_write(block, size, BACKING_RECORD);
    else if (!block_map_insert((uintptr_t)block, size, BACKING_RECORD, &replaced))
        monitor_count_untracked();
    state->counters[field]++;
    state->counters[MPROF_SUM_BACKING_BLOCKS]++;
    state->counters[MPROF_SUM_BACKING_BYTES] += size;
    spin_unlock(&state->lock);
    leave(tls);
}

void monitor_pool_backing(struct block_table *objects, const void *piece, size_t size)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    struct thread_state *state = current_state();
    if (likely(state)) {
        bool replaced = false;
        lock_own(state);
        if (!table_put(objects, (void *)piece, size, BACKING_RECORD, &replaced))
            monitor_count_untracked();
        state->counters[MPROF_SUM_POOL_ALLOC_CALLS]++;
        state->counters[MPROF_SUM_BACKING_BLOCKS]++;
        state->counters[MPROF_SUM_BACKING_BYTES] += size;
        spin_unlock(&state->lock);
    }
    leave(tls);
}

/* Counts the allocation of block, at path (its lookup made with the
 * thread's lock taken, which it lets go of); the guard is up, and is let
 * down at the end. */
MONITOR_TEXT_INLINE static inline __attribute__((always_inline)) void
count_at_path(struct monitor_tls *tls, struct thread_state *state, void *block, size_t size,
              enum mprof_summary_field field, bool headed, struct block_table *objects, bool own_kind, uint32_t path,
              bool truncated)
{
    struct path_counts *counts = path != PATH_NONE ? counts_of(state, path) : NULL;
    bool replaced = false;
    /* Untracked (out of memory): counted as allocated but never freed,
     * nothing better is known. */
    bool tracked = counts && (headed || (objects ? table_put(objects, block, size, path, &replaced)
                                                 : block_map_insert((uintptr_t)block, size, path, &replaced)));
    if (headed)
        header_write(block, size, tracked ? path : BLOCK_HEADER_UNTRACKED);
    unsigned bin = bin_of(size);
    struct peak_change change = {0};
    bool counted_now = tracked && live_change(state, (int64_t)size, 1, counts, bin, &change);
    if (likely(counts)) {
        counts->allocs++;
        counts->bytes[size_class(size)] += size;
    }
    state->bin_allocs[bin]++;
    if (bin == MPROF_BIN_LARGE)
        state->large_bytes += size;
    state->counters[field]++;
    state->counters[MPROF_SUM_ALLOCS]++;
    state->counters[MPROF_SUM_BYTES_ALLOCATED] += size;
    /* mprof- mode stops at the leak chain on purpose. */
    state->counters[MPROF_SUM_TRUNCATED_CHAINS] += truncated && monitor.options.call_graph;
    if (likely(counted_now))
        thread_state_peak_change(state, counts, bin, change, (int64_t)size, 1);
    state->last_block = tracked ? (uintptr_t)block : 0;
    /* The trace is of the malloc family's calls, for replaying them. */
    if (unlikely(trace_enabled) && !own_kind) {
        if (tracked)
            trace_allocated(tls, state, block, size, field, path);
        tls->trace_alignment = 0;
        tls->trace_realloc_sequence = 0;
    }
    spin_unlock(&state->lock);

    if (likely(tracked)) {
        if (unlikely(replaced))
            monitor_count_untracked();
        if (unlikely(change.live >= atomic_load_explicit(&checkpoint_due_bytes, memory_order_relaxed)))
            checkpoint_after_peak(change.live);
    }
    tls->allocs_since_clock++;
    if (unlikely((tls->allocs_since_clock & (TIMELINE_TICK_EVERY - 1)) == 0 || size >= TIMELINE_LARGE_BLOCK)) {
        timeline_tick();
        watch_tick();
        if ((tls->allocs_since_clock & (CHECKPOINT_CLOCK_EVERY - 1)) == 0)
            checkpoint_tick();
    }
    leave(tls);
}

/* Counts the allocation of block, whose chain was walked: of the malloc
 * family, or of the program's own kind (a pool's object, a mapping: the
 * chain starts with its frame); the guard is up, and is let down at the
 * end. */
MONITOR_TEXT_INLINE static inline __attribute__((always_inline)) void
count_allocation(struct monitor_tls *tls, struct thread_state *state, void *block, size_t size,
                 enum mprof_summary_field field, bool headed, struct block_table *objects, bool own_kind,
                 const uintptr_t *chain, unsigned depth, bool truncated)
{
    lock_own(state);
    uint32_t path = path_of_chain(state, &state->previous[own_kind ? PREVIOUS_OBJECTS : PREVIOUS_BLOCKS], chain, depth);
    count_at_path(tls, state, block, size, field, headed, objects, own_kind, path, truncated);
}

/* The exiting threads' shared state, which has no chain buffer (thread.h):
 * each walks into a chain on its own stack, since they may walk at once,
 * and with libunwind, since the walk memory is one thread's.  frame: a
 * pool's object's innermost frame, with objects. */
MONITOR_TEXT static void count_shared_allocation(struct monitor_tls *tls, struct thread_state *state, void *block,
                                                 size_t size, enum mprof_summary_field field, bool headed,
                                                 struct block_table *objects, uintptr_t frame, unsigned max_depth)
{
    uintptr_t chain[UNWIND_BUFFER_SIZE(max_depth)];
    bool truncated;
    unsigned skip = frame != 0;
    unsigned depth = unwind_chain(chain + skip, max_depth - skip, NULL, &truncated) + skip;
    chain[0] = frame ? frame : chain[0];
    count_allocation(tls, state, block, size, field, headed, objects, frame != 0, chain, depth, truncated);
}

/* Walks the chain of an allocation and counts it: of a block of the malloc
 * family (frame 0, known when inlined), or of a pool's object (in objects)
 * or a mapping, whose chain starts with frame.  The guard is up, and is
 * let down at the end. */
MONITOR_TEXT_INLINE static inline __attribute__((always_inline)) void
walk_and_count(struct monitor_tls *tls, struct thread_state *state, void *block, size_t size,
               enum mprof_summary_field field, bool headed, struct block_table *objects, uintptr_t frame)
{
    if (!headed && !frame)
        block_map_prefetch((uintptr_t)block);
    unsigned max_depth = monitor.options.stack_depth;
    if (!monitor.options.call_graph)
        max_depth = monitor.options.leak_depth;
    uintptr_t *chain = state->scratch;
    if (unlikely(!chain)) {
        count_shared_allocation(tls, state, block, size, field, headed, objects, frame, max_depth);
        return;
    }
    bool truncated;
    struct walk_memory *walk = monitor.options.cached_rules ? &state->walk : NULL;
    /* The pool's frame is one of the depth's. */
    unsigned skip = frame != 0;
    unsigned depth = unwind_chain(chain + skip, max_depth - skip, walk, &truncated) + skip;
    if (frame)
        chain[0] = frame;
    count_allocation(tls, state, block, size, field, headed, objects, frame != 0, chain, depth, truncated);
}

MONITOR_TEXT void monitor_alloc(void *block, size_t size, enum mprof_summary_field field, bool headed)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    struct thread_state *state = current_state();
    if (unlikely(!state)) {
        if (headed)
            header_write(block, size, BLOCK_HEADER_UNTRACKED);
        monitor_count_untracked();
        leave(tls);
        return;
    }
    if (unlikely(tls->backing)) {
        count_backing(tls, state, block, size, field, headed);
        return;
    }
    walk_and_count(tls, state, block, size, field, headed, NULL, 0);
}

/* The guard raised and the thread's state for an allocation of the
 * program's own kind; NULL, the guard let down and the allocation counted
 * untracked, when there is no state. */
static inline struct thread_state *enter_own_kind(struct monitor_tls *tls)
{
    tls->busy = 1;
    struct thread_state *state = current_state();
    if (unlikely(!state)) {
        monitor_count_untracked();
        leave(tls);
    }
    return state;
}

MONITOR_TEXT void monitor_pool_alloc(struct block_table *objects, uint32_t frame, const void *object, size_t size)
{
    struct monitor_tls *tls = &monitor_tls;
    struct thread_state *state = enter_own_kind(tls);
    if (unlikely(!state))
        return;
    walk_and_count(tls, state, (void *)object, size, MPROF_SUM_POOL_ALLOC_CALLS, false, objects,
                   MPROF_POOL_FRAME_BASE + frame);
}

/* Counts the free of a block of the map; called with the thread's lock
 * held, which may be let go of and taken again before anything changes. */
MONITOR_TEXT static void account_free(struct thread_state *state, uintptr_t block, const struct block_info *info)
{
    if (unlikely(info->record == BACKING_RECORD)) {
        state->counters[MPROF_SUM_BACKING_FREES]++;
        state->counters[MPROF_SUM_BACKING_BYTES_FREED] += info->size;
        return;
    }
    if (unlikely(info->record < paths_first_own_path())) {
        state->counters[MPROF_SUM_INHERITED_FREES]++;
        return;
    }
    struct path_counts *counts = counts_of(state, info->record);
    unsigned class = size_class(info->size);
    unsigned bin = bin_of(info->size);
    struct peak_change change;
    bool counted_now = live_change(state, -(int64_t)info->size, -1, counts, bin, &change);
    bool temporary = block == state->last_block;
    if (temporary) {
        state->last_block = 0;
        state->bin_temporaries[bin]++;
        state->counters[MPROF_SUM_TEMPORARY_ALLOCS]++;
    }
    if (likely(counts)) {
        counts->frees++;
        counts->freed[class] += info->size;
        counts->temporaries += temporary;
    }
    if (counted_now)
        thread_state_peak_change(state, counts, bin, change, -(int64_t)info->size, -1);
    state->bin_frees[bin]++;
    if (bin == MPROF_BIN_LARGE)
        state->large_freed += info->size;
    state->counters[MPROF_SUM_FREES]++;
    state->counters[MPROF_SUM_BYTES_FREED] += info->size;
}

/* Whether a call is one of the malloc family's, which the trace holds. */
static inline bool malloc_family(enum mprof_summary_field field)
{
    return field >= MPROF_SUM_MALLOC_CALLS && field <= MPROF_SUM_DELETE_CALLS;
}

/* Whether the trace has the allocation of a block: the process's own, and
 * not a pool's backing. */
static inline bool traced(const struct block_info *info)
{
    return info->record >= paths_first_own_path() && info->record != BACKING_RECORD;
}

/* Counts a free: of the program's block (known, with info), of NULL, or of
 * a block the monitor never returned or could not count, which is counted
 * only if count_unknown.  The guard is up. */
MONITOR_TEXT static void count_free(struct thread_state *state, void *block, bool known, const struct block_info *info,
                                    enum mprof_summary_field field, bool count_unknown)
{
    if (!known && block && !count_unknown)
        return;
    lock_own(state);
    if (!block)
        state->counters[MPROF_SUM_FREE_NULL]++;
    else if (known)
        account_free(state, (uintptr_t)block, info);
    else
        state->counters[MPROF_SUM_UNKNOWN_FREES]++;
    state->counters[field]++;
    if (unlikely(trace_enabled) && known && traced(info) && malloc_family(field))
        trace_free(&state->trace, trace_sequence(), field, (uintptr_t)block);
    spin_unlock(&state->lock);
}

/* Takes a block out of the map and counts its free. */
MONITOR_TEXT static void record_free(void *block, enum mprof_summary_field field, bool count_unknown)
{
    struct thread_state *state = current_state();
    if (unlikely(!state))
        return;
    struct block_info info;
    bool known = block && block_map_remove((uintptr_t)block, &info);
    count_free(state, block, known, &info, field, count_unknown);
}

/* The same for a block with a header, read before its real free. */
MONITOR_TEXT static void record_headed_free(void *block, enum mprof_summary_field field, bool count_unknown)
{
    struct thread_state *state = current_state();
    if (unlikely(!state))
        return;
    struct block_header header = *header_of(block);
    struct block_info info = {header.size, header.record};
    count_free(state, block, header.record != BLOCK_HEADER_UNTRACKED, &info, field, count_unknown);
}

MONITOR_TEXT void monitor_free_headed(void *block, enum mprof_summary_field field)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    record_headed_free(block, field, true);
    leave(tls);
}

MONITOR_TEXT void monitor_free(void *block, enum mprof_summary_field field)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    record_free(block, field, true);
    leave(tls);
}

/* The low bit of a deferred block says it came from delete: blocks are at
 * least 2-aligned. */
MONITOR_TEXT bool monitor_defer_free(void *block, enum mprof_summary_field field)
{
    struct monitor_tls *tls = &monitor_tls;
    if (tls->own_thread)
        return false;
    unsigned count = atomic_load_explicit(&tls->deferred_count, memory_order_relaxed);
    do {
        if (count == DEFERRED_FREES_MAX)
            return false;
    /* The slot is claimed before it is written, so that a handler of
     * another signal nested in this one claims the next. */
    } while (!atomic_compare_exchange_weak_explicit(&tls->deferred_count, &count, count + 1,
                                                    memory_order_acq_rel, memory_order_relaxed));
    tls->deferred[count] = leak_hidden((uintptr_t)block | (field == MPROF_SUM_DELETE_CALLS));
    atomic_signal_fence(memory_order_release);
    return true;
}

/* Called with the guard up, so no handler's allocation can reach the map
 * meanwhile.  A block missing from the map was the monitor's own (its
 * libraries free with the guard up too), not the program's: not counted. */
MONITOR_TEXT static void apply_deferred(struct monitor_tls *tls)
{
    unsigned count = atomic_load_explicit(&tls->deferred_count, memory_order_acquire);
    while (count) {
        uintptr_t entry = leak_hidden(tls->deferred[count - 1]);
        if (!atomic_compare_exchange_weak_explicit(&tls->deferred_count, &count, count - 1,
                                                   memory_order_acq_rel, memory_order_acquire))
            continue;
        void *block = (void *)(entry & ~(uintptr_t)1);
        enum mprof_summary_field field = entry & 1 ? MPROF_SUM_DELETE_CALLS : MPROF_SUM_FREE_CALLS;
        if (has_header(block)) {
            record_headed_free(block, field, false);
            real.free(header_released(block));
        } else {
            record_free(block, field, false);
            real.free(block);
        }
        count = atomic_load_explicit(&tls->deferred_count, memory_order_acquire);
    }
}

MONITOR_TEXT bool monitor_take(void *block, struct block_info *info)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    bool known = block_map_remove((uintptr_t)block, info);
    leave(tls);
    return known;
}

MONITOR_TEXT void monitor_released(void *block, bool known, const struct block_info *info, uint64_t sequence,
                                   bool freed)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    struct thread_state *state = current_state();
    if (likely(state)) {
        lock_own(state);
        if (known)
            account_free(state, (uintptr_t)block, info);
        else
            state->counters[MPROF_SUM_UNKNOWN_FREES]++;
        /* A backing block's new block is backing too. */
        if (known && info->record == BACKING_RECORD && !freed)
            tls->backing |= 1;
        /* An old block the trace never had: the new one is an allocation. */
        if (unlikely(sequence) && known && traced(info)) {
            if (freed) {
                trace_free(&state->trace, sequence, MPROF_SUM_REALLOC_CALLS, (uintptr_t)block);
            } else {
                tls->trace_realloc_from = leak_hidden((uintptr_t)block);
                tls->trace_realloc_sequence = sequence;
            }
        }
        spin_unlock(&state->lock);
    }
    leave(tls);
}

MONITOR_TEXT void monitor_count(enum mprof_summary_field field, enum mprof_summary_field second)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    tls->trace_alignment = 0; /* of a call that failed */
    struct thread_state *state = current_state();
    if (likely(state)) {
        lock_own(state);
        state->counters[field]++;
        if (second != field)
            state->counters[second]++;
        spin_unlock(&state->lock);
    }
    leave(tls);
}

void monitor_count_untracked(void)
{
    atomic_fetch_add_explicit(&monitor.untracked_allocs, 1, memory_order_relaxed);
}

MONITOR_TEXT void monitor_pool_free(struct block_table *objects, const void *object)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    struct thread_state *state = current_state();
    if (likely(state)) {
        uintptr_t pointer = (uintptr_t)object;
        struct block_entry entry = {0};
        spin_lock(&objects->lock);
        bool known = block_table_take(objects, block_table_hash(pointer), pointer, true, &entry);
        spin_unlock(&objects->lock);
        struct block_info info = {kind_size(entry.value), kind_record(entry.value)};
        count_free(state, (void *)object, known, &info, MPROF_SUM_POOL_FREE_CALLS, true);
    }
    leave(tls);
}

void monitor_pool_free_all(const uint64_t *words, uint64_t slots)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    struct thread_state *state = current_state();
    if (likely(state)) {
        lock_own(state);
        for (uint64_t i = 0; i < slots; i++) {
            struct block_entry entry = block_table_entry_at(words, i, true);
            if (!entry.pointer)
                continue;
            struct block_info info = {kind_size(entry.value), kind_record(entry.value)};
            account_free(state, entry.pointer, &info);
        }
        state->counters[MPROF_SUM_POOL_RESETS]++;
        spin_unlock(&state->lock);
    }
    leave(tls);
}

bool monitor_block_holds(void *block, const struct block_header *header, const void *object, size_t size)
{
    uint64_t block_size;
    uint32_t record;
    if (monitor.block_headers && header && header->tag == BLOCK_HEADER_TAG) {
        block_size = header->size;
        record = header->record;
    } else {
        struct block_info info;
        if (!block_map_find((uintptr_t)block, &info))
            return false;
        block_size = info.size;
        record = info.record;
    }
    uintptr_t start = (uintptr_t)block, at = (uintptr_t)object;
    return record < PATH_ID_LIMIT && at >= start && at - start <= block_size && size <= block_size - (at - start);
}

MONITOR_TEXT bool monitor_resize_block(void *block, const struct block_header *header, size_t size)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    struct block_info info;
    /* A region the program mapped is in no map of blocks (mapped.c): it
     * stays whole, as under memcheck. */
    bool headed = false, known = block_map_remove((uintptr_t)block, &info);
    leave(tls);
    if (!known && monitor.block_headers && header && header->tag == BLOCK_HEADER_TAG) {
        headed = true;
        info = (struct block_info){header->size, header->record};
        known = info.record != BLOCK_HEADER_UNTRACKED;
    }
    if (!known && !headed)
        return false;
    monitor_released(block, known, &info, unlikely(trace_enabled) ? trace_sequence() : 0, false);
    monitor_count(MPROF_SUM_POOL_FREE_CALLS, MPROF_SUM_POOL_FREE_CALLS);
    monitor_alloc(block, size, MPROF_SUM_POOL_ALLOC_CALLS, headed);
    return true;
}

void monitor_make_backing(void *block, const struct block_header *header)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    struct thread_state *state = current_state();
    struct block_info info;
    bool headed = monitor.block_headers && header && header->tag == BLOCK_HEADER_TAG;
    bool known;
    if (headed) {
        info = (struct block_info){header->size, header->record};
        known = info.record != BLOCK_HEADER_UNTRACKED;
    } else {
        known = block_map_remove((uintptr_t)block, &info);
    }
    if (!known || !state) {
        leave(tls);
        return;
    }
    bool own = info.record >= paths_first_own_path() && info.record != BACKING_RECORD;
    if (own) {
        /* Out of the figures as a free takes it out, and out of the
         * allocations as if it had never been counted. */
        lock_own(state);
        if (state->last_block == (uintptr_t)block)
            state->last_block = 0; /* not a temporary */
        account_free(state, (uintptr_t)block, &info);
        struct path_counts *counts = counts_of(state, info.record);
        unsigned class = size_class(info.size), bin = bin_of(info.size);
        if (counts) {
            counts->frees--;
            counts->freed[class] -= info.size;
            counts->allocs--;
            counts->bytes[class] -= info.size;
        }
        state->bin_frees[bin]--;
        state->bin_allocs[bin]--;
        if (bin == MPROF_BIN_LARGE) {
            state->large_freed -= info.size;
            state->large_bytes -= info.size;
        }
        state->counters[MPROF_SUM_FREES]--;
        state->counters[MPROF_SUM_BYTES_FREED] -= info.size;
        state->counters[MPROF_SUM_ALLOCS]--;
        state->counters[MPROF_SUM_BYTES_ALLOCATED] -= info.size;
        state->counters[MPROF_SUM_BACKING_BLOCKS]++;
        state->counters[MPROF_SUM_BACKING_BYTES] += info.size;
        if (unlikely(trace_enabled))
            trace_free(&state->trace, trace_sequence(), MPROF_SUM_FREE_CALLS, (uintptr_t)block);
        spin_unlock(&state->lock);
        info.record = BACKING_RECORD;
    }
    if (headed)
        header_of(block)->record = info.record;
    else
        block_map_restore((uintptr_t)block, &info);
    leave(tls);
}

/* The regions the program maps itself (mapped.c): their own kind of
 * memory, in their paths' figures and in none of the heap's (totals, live
 * bytes, peak, bins), as memcheck's have none. */
MONITOR_TEXT uint32_t monitor_mapping_path(uintptr_t frame)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    struct thread_state *state = current_state();
    uint32_t path = PATH_NONE;
    if (likely(state)) {
        unsigned max_depth = monitor.options.call_graph ? monitor.options.stack_depth : monitor.options.leak_depth;
        uintptr_t own[UNWIND_BUFFER_SIZE(state->scratch ? 1 : max_depth)];
        uintptr_t *chain = state->scratch ? state->scratch : own;
        struct walk_memory *walk = state->scratch && monitor.options.cached_rules ? &state->walk : NULL;
        bool truncated;
        unsigned depth = unwind_chain(chain + 1, max_depth - 1, walk, &truncated) + 1;
        chain[0] = frame;
        lock_own(state);
        path = path_of_chain(state, &state->previous[PREVIOUS_OBJECTS], chain, depth);
        state->counters[MPROF_SUM_TRUNCATED_CHAINS] += truncated && monitor.options.call_graph;
        spin_unlock(&state->lock);
    }
    leave(tls);
    return path;
}

static inline bool own_region(uint32_t record)
{
    return record != PATH_NONE && record != BACKING_RECORD && record >= paths_first_own_path();
}

/* A region allocated (sign 1) or freed (-1) in its path's figures; the
 * thread's lock held. */
static void count_region(struct thread_state *state, uint32_t path, uint64_t size, int sign)
{
    struct path_counts *counts = counts_of(state, path);
    if (unlikely(!counts)) {
        monitor_count_untracked();
        return;
    }
    if (sign > 0) {
        counts->allocs++;
        counts->bytes[size_class(size)] += size;
    } else {
        counts->frees++;
        counts->freed[size_class(size)] += size;
    }
}

/* The cuts' figures; the thread's lock held.  A region of the parent's,
 * in a fork child, is no figure of this process: it is gone, and nothing
 * is left of it to count, but the call that unmapped it is counted, as a
 * free of an inherited block is.  Whether the call is. */
static bool count_cuts(struct thread_state *state, const struct mapping_cut *cuts, size_t count)
{
    bool counted = false;
    for (size_t i = 0; i < count; i++) {
        const struct mapping_cut *cut = &cuts[i];
        counted |= cut->record != PATH_NONE;
        if (!own_region(cut->record))
            continue;
        count_region(state, cut->record, cut->size, -1);
        state->counters[MPROF_SUM_UNMAPPED_BYTES] += cut->size - cut->left[0] - cut->left[1];
        for (unsigned j = 0; j < 2; j++) {
            if (!cut->left[j])
                continue;
            count_region(state, cut->record, cut->left[j], 1);
            state->counters[MPROF_SUM_MAPPED_SPLITS]++;
        }
    }
    return counted;
}

MONITOR_TEXT void monitor_mapping_done(enum mprof_summary_field field, uint32_t path, uint64_t bytes,
                                       const struct mapping_cut *cuts, size_t count)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    struct thread_state *state = current_state();
    if (likely(state)) {
        lock_own(state);
        bool counted = count_cuts(state, cuts, count);
        if (path != PATH_NONE) {
            count_region(state, path, bytes, 1);
            state->counters[MPROF_SUM_MAPPED_BYTES] += bytes;
            counted = true;
        }
        if (counted)
            state->counters[field]++;
        spin_unlock(&state->lock);
    } else if (path != PATH_NONE) {
        monitor_count_untracked();
    }
    leave(tls);
}

void monitor_defer_cuts(enum mprof_summary_field field, const struct mapping_cut *cuts, size_t count)
{
    struct monitor_tls *tls = &monitor_tls;
    struct thread_state *state = tls->state;
    for (size_t i = 0; i < count; i++) {
        if (!state || !own_region(cuts[i].record)) /* a call made then is not counted */
            continue;
        unsigned slot = atomic_load_explicit(&tls->deferred_cut_count, memory_order_relaxed);
        bool claimed = false;
        /* Claimed before it is written, as monitor_defer_free's. */
        while (slot < DEFERRED_CUTS_MAX &&
               !(claimed = atomic_compare_exchange_weak_explicit(&tls->deferred_cut_count, &slot, slot + 1,
                                                                 memory_order_acq_rel, memory_order_relaxed)))
            ;
        if (!claimed) {
            monitor_count_untracked();
            continue;
        }
        state->deferred_cuts[slot] = cuts[i];
        state->deferred_cuts[slot].call = field;
        field = MPROF_SUM_FIELD_COUNT;
        atomic_signal_fence(memory_order_release);
    }
}

/* Called with the guard up, as apply_deferred. */
static void apply_deferred_cuts(struct monitor_tls *tls)
{
    struct thread_state *state = tls->state;
    unsigned count = atomic_load_explicit(&tls->deferred_cut_count, memory_order_acquire);
    while (count) {
        struct mapping_cut cut = state->deferred_cuts[count - 1];
        if (!atomic_compare_exchange_weak_explicit(&tls->deferred_cut_count, &count, count - 1,
                                                   memory_order_acq_rel, memory_order_acquire))
            continue;
        lock_own(state);
        count_cuts(state, &cut, 1);
        if (cut.call != MPROF_SUM_FIELD_COUNT)
            state->counters[cut.call]++;
        spin_unlock(&state->lock);
        count = atomic_load_explicit(&tls->deferred_cut_count, memory_order_acquire);
    }
}
