/* The ledger of the live figures (see live.h): what does not fit a grant,
 * and the merge of the threads' logs. */
#include "live.h"

#include <x86intrin.h>

#include "arena.h"
#include "thread.h"

struct live_ledger live_ledger = {.lock = SPINLOCK_INIT};

/* A log in the merge, and its next entry. */
struct merge_head {
    struct thread_state *state;
    uint32_t next;
};

/* The merge's heap of logs, by their next entry's stamp; guarded by the
 * ledger's lock, and grown (never shrunk) to the number of states. */
static struct merge_head *heads;
static uint32_t heads_capacity;

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

MONITOR_TEXT bool live_log_append(struct live_log *log, int64_t bytes, int64_t blocks, struct path_counts *counts,
                                  unsigned bin)
{
    if (unlikely(!log->entries) && !(log->entries = region_map(LIVE_LOG_SIZE * sizeof(struct live_entry))))
        return false;
    if (unlikely(log->count == LIVE_LOG_SIZE))
        return false;
    log->entries[log->count++] = (struct live_entry){__rdtsc(), counts, bytes, (int32_t)blocks, bin};
    /* Stored whole: live_now reads them from another thread. */
    __atomic_store_n(&log->bytes, log->bytes + bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&log->blocks, log->blocks + blocks, __ATOMIC_RELAXED);
    return true;
}

static inline uint64_t next_stamp(const struct merge_head *head)
{
    return head->state->log.entries[head->next].stamp;
}

/* Equal stamps (two processors in the same cycle) in the order of the
 * states' addresses, so that the order is one order. */
static inline bool before(const struct merge_head *a, const struct merge_head *b)
{
    uint64_t x = next_stamp(a), y = next_stamp(b);
    return x < y || (x == y && a->state < b->state);
}

static void sift_down(uint32_t count, uint32_t i)
{
    for (;;) {
        uint32_t least = i, left = 2 * i + 1, right = left + 1;
        if (left < count && before(&heads[left], &heads[least]))
            least = left;
        if (right < count && before(&heads[right], &heads[least]))
            least = right;
        if (least == i)
            return;
        struct merge_head swapped = heads[i];
        heads[i] = heads[least];
        heads[least] = swapped;
        i = least;
    }
}

/* Every log into the ledger, in the order of the stamps, and the figures at
 * the peak of their records with them; the ledger's lock, the registry's
 * and every state's held.  The state of a peak a merged change set is
 * stamped with that change's time and the process's allocation count then
 * (every allocation since counted is in a log, or made without one by a
 * thread out of memory). */
static void merge(struct live_ledger *ledger)
{
    uint32_t count = 0;
    uint64_t everyone = 0, logged_allocs = 0;
    bool every_log = true;
    for (struct thread_state *state = thread_states_newest(); state; state = state->next) {
        everyone += state->counters[MPROF_SUM_ALLOCS];
        if (!state->log.count)
            continue;
        if (count == heads_capacity) {
            uint32_t capacity = heads_capacity ? 2 * heads_capacity : 64;
            void *grown = heads ? region_grow(heads, heads_capacity * sizeof(*heads), capacity * sizeof(*heads))
                                : region_map(capacity * sizeof(*heads));
            if (!grown) {
                every_log = false; /* the logs left out stay for the next merge */
                break;
            }
            heads = grown;
            heads_capacity = capacity;
        }
        /* A peak it set before its thread logged: stamped now, as late as
         * its thread's next change would have. */
        if (state->set_pending)
            thread_state_stamp_peak(state);
        heads[count++] = (struct merge_head){state, 0};
        for (uint32_t i = 0; i < state->log.count; i++)
            logged_allocs += state->log.entries[i].blocks > 0;
    }
    uint32_t logs = count;
    for (uint32_t i = count / 2; i-- > 0;)
        sift_down(count, i);
    while (count) {
        struct thread_state *state = heads[0].state;
        const struct live_entry *entry = &state->log.entries[heads[0].next];
        struct peak_change change = live_change_ledger(entry->bytes, entry->blocks);
        logged_allocs -= entry->blocks > 0;
        thread_state_peak_change(state, entry->counts, entry->bin, change, entry->bytes, entry->blocks);
        if (change.after > change.before) {
            ledger->last_grower = state;
            state->set_tsc = entry->stamp;
            state->set_index = everyone - logged_allocs;
            state->set_pending = false;
        }
        if (++heads[0].next == state->log.count) {
            struct live_log *log = &state->log;
            log->count = 0;
            __atomic_store_n(&log->bytes, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&log->blocks, 0, __ATOMIC_RELAXED);
            heads[0] = heads[--count];
        }
        sift_down(count, 0);
    }
    /* One thread alone growing goes faster through the ledger, which
     * sends it back to the logs when another reaches a high. */
    if (every_log && (logs == 1 || (ledger->bytes < ledger->highest_bytes && ledger->blocks < ledger->highest_blocks)))
        atomic_store_explicit(&ledger->logging, false, memory_order_relaxed);
}

MONITOR_TEXT bool live_change_settled(struct thread_state *state, int64_t bytes, int64_t blocks,
                                      struct path_counts *counts, unsigned bin, struct peak_change *change)
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
    bool logging = atomic_load_explicit(&ledger->logging, memory_order_relaxed);
    if (!logging && (ledger->bytes + bytes + ledger->granted_bytes > ledger->highest_bytes ||
                     ledger->blocks + blocks + ledger->granted_blocks > ledger->highest_blocks)) {
        call_back_grants(ledger);
        if (ledger->bytes + bytes > ledger->highest_bytes || ledger->blocks + blocks > ledger->highest_blocks) {
            /* A new high after another thread's: from here on, logs. */
            logging = ledger->last_grower && ledger->last_grower != state;
            atomic_store_explicit(&ledger->logging, logging, memory_order_relaxed);
            ledger->last_grower = state;
        }
    }
    if (logging && !live_log_append(&state->log, bytes, blocks, counts, bin)) {
        /* The log is full: every log is merged, every state held, in the
         * locks' order. */
        spin_unlock(&state->lock);
        thread_states_lock_each();
        merge(ledger);
        thread_states_unlock_each();
        spin_lock(&state->lock);
        logging = atomic_load_explicit(&ledger->logging, memory_order_relaxed);
        /* An unmapped log, as room made by the merge: into the ledger,
         * after everything merged. */
        if (logging && !live_log_append(&state->log, bytes, blocks, counts, bin))
            logging = false;
    }
    if (logging) {
        spin_unlock(&ledger->lock);
        return false;
    }
    *change = live_change_ledger(bytes, blocks);
    if (!atomic_load_explicit(&ledger->logging, memory_order_relaxed))
        give_grant(ledger, &state->grant);
    spin_unlock(&ledger->lock);
    return true;
}

void live_merge_logs(bool bounded)
{
    struct live_ledger *ledger = &live_ledger;
    if (!live_logging() || !spin_lock_within(&ledger->lock, bounded))
        return;
    if (thread_states_lock_each_within(bounded)) {
        merge(ledger);
        thread_states_unlock_each();
    }
    spin_unlock(&ledger->lock);
}

void live_merge_logs_held(void)
{
    if (live_logging())
        merge(&live_ledger);
}

void live_now(uint64_t *bytes, uint64_t *blocks)
{
    struct live_ledger *ledger = &live_ledger;
    /* Under the ledger's lock no change moves between a thread and the
     * ledger; the threads' own changes are read as they stand. */
    spin_lock(&ledger->lock);
    int64_t live_bytes = ledger->bytes, live_blocks = ledger->blocks;
    for (struct thread_state *state = thread_states_newest(); state; state = state->next) {
        live_bytes += __atomic_load_n(&state->grant.bytes, __ATOMIC_RELAXED) +
                      __atomic_load_n(&state->log.bytes, __ATOMIC_RELAXED);
        live_blocks += __atomic_load_n(&state->grant.blocks, __ATOMIC_RELAXED) +
                       __atomic_load_n(&state->log.blocks, __ATOMIC_RELAXED);
    }
    spin_unlock(&ledger->lock);
    *bytes = live_bytes > 0 ? (uint64_t)live_bytes : 0;
    *blocks = live_blocks > 0 ? (uint64_t)live_blocks : 0;
}

void live_fork_child(void)
{
    live_ledger = (struct live_ledger){.lock = SPINLOCK_INIT};
}
