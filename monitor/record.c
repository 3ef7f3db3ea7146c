/* The hot path: what happens on every allocation and free. */
#include <stdatomic.h>
#include <string.h>

#include "arena.h"
#include "checkpoint.h"
#include "monitor.h"
#include "real.h"
#include "records.h"
#include "unwind.h"
#include "state.h"

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

/* Returns the live bytes with this block. */
static inline uint64_t live_add(uint64_t bytes)
{
    uint64_t objects = atomic_fetch_add_explicit(&monitor.live_objects, 1, memory_order_relaxed) + 1;
    uint64_t live = atomic_fetch_add_explicit(&monitor.live_bytes, bytes, memory_order_relaxed) + bytes;
    raise_max(&monitor.max_live_objects, objects);
    raise_max(&monitor.max_live_bytes, live);
    return live;
}

static inline void live_sub(uint64_t bytes)
{
    atomic_fetch_sub_explicit(&monitor.live_objects, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&monitor.live_bytes, bytes, memory_order_relaxed);
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

MONITOR_TEXT_INLINE static struct pair_counts *find_pair(struct thread_state *state,
                                                         uintptr_t caller, uintptr_t callee)
{
    uint64_t folded = pair_fold(caller, callee);
    struct pair_counts **recent = &state->recent_pairs[folded >> (64 - RECENT_BITS)];
    struct pair_counts *pair = *recent;
    if (likely(pair && pair->caller == caller && pair->callee == callee))
        return pair;
    uintptr_t key[2] = {caller, callee};
    uint64_t hash = mix64(folded);
    pair = ptable_find(&state->pairs, hash, pair_has_key, key);
    if (!pair && (pair = arena_alloc(sizeof(*pair)))) {
        pair->caller = caller;
        pair->callee = callee;
        if (!ptable_add(&state->pairs, hash, pair))
            pair = NULL;
    }
    if (pair)
        *recent = pair;
    return pair;
}

/* Paper 3.2: compare the new chain with the previous one from the outermost
 * frame in; the pairs of the common part are already at hand, only the rest
 * is hashed.  chain is innermost first, the cache outermost first. */
MONITOR_TEXT_INLINE static void count_pairs(struct thread_state *state, const uintptr_t *chain,
                                            unsigned depth, uint64_t size)
{
    unsigned common = 0;
    unsigned previous = state->cached_depth;
    while (common < depth && common < previous &&
           state->cached_addrs[common] == chain[depth - 1 - common])
        common++;
    for (unsigned i = common; i < depth; i++)
        state->cached_addrs[i] = chain[depth - 1 - i];
    state->cached_depth = depth;
    unsigned class = size_class(size);
    for (unsigned i = 0; i + 1 < depth; i++) {
        struct pair_counts *pair = state->cached_pairs[i];
        if (i + 1 >= common) {
            pair = find_pair(state, state->cached_addrs[i], state->cached_addrs[i + 1]);
            state->cached_pairs[i] = pair;
        }
        if (likely(pair)) {
            pair->calls++;
            pair->bytes[class] += size;
        }
    }
}

static bool same_site(const void *entry, const void *key)
{
    return records_same_chain(((const struct site_counts *)entry)->chain, key);
}

/* Registers a new site_counts for chain in both of the thread's indexes. */
MONITOR_TEXT static struct site_counts *add_site(struct thread_state *state,
                                                 const struct leak_chain *chain)
{
    if (chain->id >= state->site_by_id_capacity) {
        uint32_t capacity = state->site_by_id_capacity ? state->site_by_id_capacity : 1024;
        while (capacity <= chain->id)
            capacity *= 2;
        size_t old_size = state->site_by_id_capacity * sizeof(*state->site_by_id);
        size_t new_size = capacity * sizeof(*state->site_by_id);
        void *grown = state->site_by_id ? region_grow(state->site_by_id, old_size, new_size)
                                        : region_map(new_size);
        if (!grown)
            return NULL;
        state->site_by_id = grown;
        state->site_by_id_capacity = capacity;
    }
    struct site_counts *site = arena_alloc(sizeof(*site));
    if (!site)
        return NULL;
    site->chain = chain;
    if (!ptable_add(&state->sites, chain->hash, site))
        return NULL;
    state->site_by_id[chain->id] = site;
    return site;
}

MONITOR_TEXT_INLINE static struct site_counts *site_for_chain(struct thread_state *state,
                                                              const uintptr_t *leak, unsigned depth)
{
    uint64_t folded = fold_word(fold_word(0, leak[0]), leak[depth - 1]);
    struct site_counts **recent = &state->recent_sites[folded >> (64 - RECENT_BITS)];
    struct site_counts *site = *recent;
    if (likely(site && records_same_chain(site->chain, leak)))
        return site;
    uint64_t hash = records_hash(leak);
    site = ptable_find(&state->sites, hash, same_site, leak);
    if (!site) {
        const struct leak_chain *chain = records_intern(leak, hash);
        if (!chain)
            return NULL;
        site = add_site(state, chain);
    }
    if (site)
        *recent = site;
    return site;
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

    uintptr_t leak[64];
    unsigned leak_depth = monitor.options.leak_depth;
    for (unsigned i = 0; i < leak_depth; i++)
        leak[i] = i < depth ? chain[i] : 0;

    spin_lock(&state->lock);
    if (monitor.options.call_graph)
        count_pairs(state, chain, depth, size);
    struct site_counts *site = site_for_chain(state, leak, leak_depth);
    uint32_t record = RECORD_ID_LIMIT;
    if (likely(site)) {
        unsigned class = size_class(size);
        site->allocs++;
        site->bytes[class] += size;
        record = site->chain->id;
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
    spin_unlock(&state->lock);

    bool replaced = false;
    if (unlikely(!site || !ptrmap_insert((uintptr_t)block, size, record, &replaced))) {
        /* Counted as allocated but never freed: nothing better is known. */
    } else {
        if (unlikely(replaced))
            monitor_count_untracked();
        uint64_t live = live_add(size);
        if (unlikely(live >= atomic_load_explicit(&checkpoint_due_bytes, memory_order_relaxed)))
            checkpoint_after_peak(live);
    }
    if (unlikely((++tls->allocs_since_clock & (CHECKPOINT_CLOCK_EVERY - 1)) == 0))
        checkpoint_tick();
    leave(tls);
}

/* The site_counts of record for a thread that never allocated from it. */
MONITOR_TEXT static struct site_counts *site_for_id(struct thread_state *state, uint32_t record)
{
    if (likely(record < state->site_by_id_capacity && state->site_by_id[record]))
        return state->site_by_id[record];
    const struct leak_chain *chain = records_by_id(record);
    return chain ? add_site(state, chain) : NULL;
}

MONITOR_TEXT static void account_free(struct thread_state *state, const struct block_info *info)
{
    if (unlikely(info->record < records_first_own_id())) {
        state->counters[MPROF_SUM_INHERITED_FREES]++;
        return;
    }
    struct site_counts *site = site_for_id(state, info->record);
    unsigned class = size_class(info->size);
    if (likely(site)) {
        site->frees++;
        site->freed[class] += info->size;
    }
    unsigned bin = bin_of(info->size);
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
        account_free(state, &info);
    else
        state->counters[MPROF_SUM_UNKNOWN_FREES]++;
    spin_unlock(&state->lock);
    if (known && info.record >= records_first_own_id())
        live_sub(info.size);
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

MONITOR_TEXT void monitor_released(bool known, const struct block_info *info)
{
    struct monitor_tls *tls = &monitor_tls;
    tls->busy = 1;
    struct thread_state *state = current_state();
    if (likely(state)) {
        spin_lock(&state->lock);
        if (known)
            account_free(state, info);
        else
            state->counters[MPROF_SUM_UNKNOWN_FREES]++;
        spin_unlock(&state->lock);
    }
    if (known && info->record >= records_first_own_id())
        live_sub(info->size);
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
