/* The hot path: what happens on every allocation and free. */
#include <stdatomic.h>
#include <string.h>

#include "arena.h"
#include "checkpoint.h"
#include "monitor.h"
#include "real.h"
#include "paths.h"
#include "unwind.h"
#include "state.h"
#include "timeline.h"

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

static inline void raise_max(atomic_uint_least64_t *max, uint64_t value)
{
    uint64_t seen = atomic_load_explicit(max, memory_order_relaxed);
    while (value > seen &&
           !atomic_compare_exchange_weak_explicit(max, &seen, value, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

/* One thread alone cannot race itself: no locked instruction until a
 * second thread is started. */
static inline bool threads_share(void)
{
    return atomic_load_explicit(&monitor.threads_started, memory_order_relaxed);
}

static inline void objects_add(void)
{
    if (likely(!threads_share())) {
        uint64_t live = atomic_load_explicit(&monitor.live_objects, memory_order_relaxed) + 1;
        atomic_store_explicit(&monitor.live_objects, live, memory_order_relaxed);
        if (live > atomic_load_explicit(&monitor.max_live_objects, memory_order_relaxed))
            atomic_store_explicit(&monitor.max_live_objects, live, memory_order_relaxed);
        return;
    }
    raise_max(&monitor.max_live_objects, atomic_fetch_add_explicit(&monitor.live_objects, 1, memory_order_relaxed) + 1);
}

static inline void objects_sub(void)
{
    if (likely(!threads_share())) {
        atomic_store_explicit(&monitor.live_objects,
                              atomic_load_explicit(&monitor.live_objects, memory_order_relaxed) - 1,
                              memory_order_relaxed);
        return;
    }
    atomic_fetch_sub_explicit(&monitor.live_objects, 1, memory_order_relaxed);
}

/* A block of size bytes goes live (bytes and blocks positive) or is freed
 * (negative), in its path's and its bin's figures; called with the thread's
 * lock held.  Returns the live bytes after it. */
static inline uint64_t live_change_of(struct thread_state *state, struct path_counts *counts, unsigned bin,
                                      int64_t bytes, int64_t blocks)
{
    struct peak_change change = live_change(&monitor.live, bytes, threads_share(), &state->live_guess);
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
    return change.live;
}

static void apply_deferred(struct monitor_tls *tls);

/* Every recording function ends here: the frees that signal handlers
 * deferred meanwhile are applied while the guard is still up. */
static inline void leave(struct monitor_tls *tls)
{
    if (unlikely(atomic_load_explicit(&tls->deferred_count, memory_order_acquire)))
        apply_deferred(tls);
    tls->busy = 0;
}

static inline struct thread_state *current_state(void)
{
    struct thread_state *state = monitor_tls.state;
    if (likely(state))
        return state;
    return monitor_claim_state();
}

MONITOR_TEXT_INLINE static const struct path_node *find_node(struct thread_state *state, uint32_t parent,
                                                            uintptr_t address)
{
    uint64_t folded = fold_word(fold_word(0, parent), address);
    const struct path_node **recent = &state->recent_nodes[folded >> (64 - RECENT_BITS)];
    const struct path_node *node = *recent;
    if (likely(node && node->parent == parent && node->address == address))
        return node;
    node = paths_node(parent, address, paths_hash(parent, address));
    if (node)
        *recent = node;
    return node;
}

/* The path of chain (innermost first), the paper's way (3.2): compared
 * with the previous chain from the outermost frame in, the nodes of the
 * common part are already at hand, and only the rest is looked up.
 * PATH_NONE when out of memory. */
MONITOR_TEXT_INLINE static uint32_t path_of_chain(struct thread_state *state, const uintptr_t *chain,
                                                  unsigned depth)
{
    unsigned common = 0;
    unsigned previous = state->cached_depth;
    while (common < depth && common < previous && state->cached_addrs[common] == chain[depth - 1 - common])
        common++;
    if (likely(common == depth && depth == previous && state->cached_path != PATH_NONE))
        return state->cached_path;
    const struct path_node *leaf = common ? state->cached_nodes[common - 1] : NULL;
    uint32_t parent = leaf ? leaf->id : paths_root();
    for (unsigned i = common; i < depth; i++) {
        uintptr_t address = chain[depth - 1 - i];
        leaf = find_node(state, parent, address);
        if (unlikely(!leaf)) {
            state->cached_depth = i;
            state->cached_path = PATH_NONE;
            return PATH_NONE;
        }
        parent = leaf->id;
        state->cached_addrs[i] = address;
        state->cached_nodes[i] = leaf;
    }
    state->cached_depth = depth;
    /* Only the empty chain (no frame unwound) ends at the root itself. */
    if (!leaf)
        leaf = paths_node_by_id(parent);
    state->cached_path = leaf ? paths_path_of(leaf) : PATH_NONE;
    return state->cached_path;
}

/* The thread's counts of path, made on first use; NULL when out of memory. */
MONITOR_TEXT_INLINE static struct path_counts *counts_of(struct thread_state *state, uint32_t path)
{
    if (likely(path < state->counts_capacity && state->counts_by_path[path]))
        return state->counts_by_path[path];
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

MONITOR_TEXT void monitor_alloc(void *block, size_t size, enum mprof_summary_field field)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    struct thread_state *state = current_state();
    if (unlikely(!state)) {
        monitor_count_untracked();
        leave(tls);
        return;
    }
    ptrmap_prefetch((uintptr_t)block);
    unsigned max_depth = monitor.options.stack_depth;
    if (!monitor.options.call_graph)
        max_depth = monitor.options.leak_depth;
    bool truncated;
    uintptr_t *chain = state->scratch;
    struct walk_memory *walk = monitor.options.cached_rules ? &state->walk : NULL;
    unsigned depth = unwind_chain(chain, max_depth, walk, &truncated);

    spin_lock(&state->lock);
    uint32_t path = path_of_chain(state, chain, depth);
    struct path_counts *counts = path != PATH_NONE ? counts_of(state, path) : NULL;
    if (likely(counts)) {
        counts->allocs++;
        counts->bytes[size_class(size)] += size;
    }
    unsigned bin = bin_of(size);
    state->bin_allocs[bin]++;
    if (bin == MPROF_BIN_LARGE)
        state->large_bytes += size;
    state->counters[field]++;
    state->counters[MPROF_SUM_ALLOCS]++;
    state->counters[MPROF_SUM_BYTES_ALLOCATED] += size;
    /* mprof- mode stops at the leak chain on purpose. */
    state->counters[MPROF_SUM_TRUNCATED_CHAINS] += truncated && monitor.options.call_graph;
    bool replaced = false;
    uint64_t live = 0;
    /* Untracked (out of memory): counted as allocated but never freed,
     * nothing better is known. */
    bool tracked = counts && ptrmap_insert((uintptr_t)block, size, path, &replaced);
    if (likely(tracked))
        live = live_change_of(state, counts, bin, (int64_t)size, 1);
    state->last_block = tracked ? (uintptr_t)block : 0;
    spin_unlock(&state->lock);

    if (likely(tracked)) {
        if (unlikely(replaced))
            monitor_count_untracked();
        objects_add();
        if (unlikely(live >= atomic_load_explicit(&checkpoint_due_bytes, memory_order_relaxed)))
            checkpoint_after_peak(live);
    }
    tls->allocs_since_clock++;
    if (unlikely((tls->allocs_since_clock & (TIMELINE_TICK_EVERY - 1)) == 0 || size >= TIMELINE_LARGE_BLOCK)) {
        timeline_tick();
        if ((tls->allocs_since_clock & (CHECKPOINT_CLOCK_EVERY - 1)) == 0)
            checkpoint_tick();
    }
    leave(tls);
}

/* Counts the free of a block of the map; called with the thread's lock held. */
MONITOR_TEXT static void account_free(struct thread_state *state, uintptr_t block, const struct block_info *info)
{
    if (unlikely(info->record < paths_first_own_path())) {
        state->counters[MPROF_SUM_INHERITED_FREES]++;
        return;
    }
    struct path_counts *counts = counts_of(state, info->record);
    unsigned class = size_class(info->size);
    unsigned bin = bin_of(info->size);
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
        live_change_of(state, counts, bin, -(int64_t)info->size, -1);
    }
    state->bin_frees[bin]++;
    if (bin == MPROF_BIN_LARGE)
        state->large_freed += info->size;
    state->counters[MPROF_SUM_FREES]++;
    state->counters[MPROF_SUM_BYTES_FREED] += info->size;
}

/* Takes a block out of the map and counts its free; the guard is up. */
MONITOR_TEXT static void record_free(void *block, enum mprof_summary_field field, bool count_unknown)
{
    struct thread_state *state = current_state();
    if (unlikely(!state))
        return;
    struct block_info info;
    bool known = block && ptrmap_remove((uintptr_t)block, &info);
    if (!known && block && !count_unknown)
        return;
    spin_lock(&state->lock);
    state->counters[field]++;
    if (!block)
        state->counters[MPROF_SUM_FREE_NULL]++;
    else if (known)
        account_free(state, (uintptr_t)block, &info);
    else
        state->counters[MPROF_SUM_UNKNOWN_FREES]++;
    spin_unlock(&state->lock);
    if (known && info.record >= paths_first_own_path())
        objects_sub();
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
    unsigned count = atomic_load_explicit(&tls->deferred_count, memory_order_relaxed);
    do {
        if (count == DEFERRED_FREES_MAX)
            return false;
    /* The slot is claimed before it is written, so that a handler of
     * another signal nested in this one claims the next. */
    } while (!atomic_compare_exchange_weak_explicit(&tls->deferred_count, &count, count + 1,
                                                    memory_order_acq_rel, memory_order_relaxed));
    tls->deferred[count] = (uintptr_t)block | (field == MPROF_SUM_DELETE_CALLS);
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
        uintptr_t entry = tls->deferred[count - 1];
        if (!atomic_compare_exchange_weak_explicit(&tls->deferred_count, &count, count - 1,
                                                   memory_order_acq_rel, memory_order_acquire))
            continue;
        void *block = (void *)(entry & ~(uintptr_t)1);
        record_free(block, entry & 1 ? MPROF_SUM_DELETE_CALLS : MPROF_SUM_FREE_CALLS, false);
        real.free(block);
        count = atomic_load_explicit(&tls->deferred_count, memory_order_acquire);
    }
}

MONITOR_TEXT bool monitor_take(void *block, struct block_info *info)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    bool known = ptrmap_remove((uintptr_t)block, info);
    leave(tls);
    return known;
}

MONITOR_TEXT void monitor_released(void *block, bool known, const struct block_info *info)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    struct thread_state *state = current_state();
    if (likely(state)) {
        spin_lock(&state->lock);
        if (known)
            account_free(state, (uintptr_t)block, info);
        else
            state->counters[MPROF_SUM_UNKNOWN_FREES]++;
        spin_unlock(&state->lock);
    }
    if (known && info->record >= paths_first_own_path())
        objects_sub();
    leave(tls);
}

MONITOR_TEXT void monitor_count(enum mprof_summary_field field, enum mprof_summary_field second)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    struct thread_state *state = current_state();
    if (likely(state)) {
        spin_lock(&state->lock);
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
