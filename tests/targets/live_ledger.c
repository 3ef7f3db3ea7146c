/* The live figures' ledger (monitor/live.c) on its own, driven the way
 * record.c drives it, by four made-up threads taking turns at random:
 * allocations of random sizes from eight paths, and frees of random live
 * blocks, whichever thread made them (the freeing thread's record of the
 * block's path counts the free, as in record.c).  Since the turns run one
 * at a time, in the order of their time-stamps, the live figures, their
 * highs and every path's live figures when the live bytes were highest are
 * known exactly at every step.  After each step live_now() must give the
 * live figures, and the ledger's highs theirs whenever no thread logs;
 * a change that went through the ledger must have seen the highs before
 * and after it.  Every 50,000 steps (the busiest log fills and is merged
 * many times between), and at the end, the logs are merged as a writer of
 * a data file merges them: then the highs, and each path's and
 * each bin's figures at the peak, summed over the threads (peak_settled,
 * as the writer sums them), must be the known ones.  Prints the number of
 * steps checked, then "exact", how many changes fit their thread's grant
 * and how many were logged, or the first step that differs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "live.h"
#include "thread.h"

#define THREADS 4
#define PATHS 8
#define STEPS 2000000
#define MOST_BLOCKS 4096

static struct thread_state states[THREADS];
static struct path_counts records[THREADS][PATHS];
static struct peak_figures bins[THREADS][MPROF_BIN_COUNT];
static long within_grants, logged;

struct thread_state *thread_states_newest(void)
{
    return &states[0];
}

bool thread_states_lock_each_within(bool bounded)
{
    (void)bounded;
    for (int n = 0; n < THREADS; n++)
        spin_lock(&states[n].lock);
    return true;
}

void thread_states_lock_each(void)
{
    thread_states_lock_each_within(false);
}

void thread_states_unlock_each(void)
{
    for (int n = 0; n < THREADS; n++)
        spin_unlock(&states[n].lock);
}

void thread_state_stamp_peak(struct thread_state *state)
{
    state->set_pending = false;
}

void *region_map(size_t size)
{
    void *region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return region == MAP_FAILED ? NULL : region;
}

void *region_grow(void *region, size_t old_size, size_t new_size)
{
    void *grown = mremap(region, old_size, new_size, MREMAP_MAYMOVE);
    return grown == MAP_FAILED ? NULL : grown;
}

/* record.c's order: the grant first, then the log while threads log, the
 * ledger when neither takes it.  False when the change was logged; else
 * what it saw of the peak. */
static bool change(struct thread_state *state, unsigned path, int64_t bytes, int64_t blocks,
                   struct peak_change *seen)
{
    struct path_counts *counts = &records[state - states][path];
    bool counted_now = true;
    spin_lock(&state->lock);
    if (live_change_granted(&state->grant, bytes, blocks, seen))
        within_grants++;
    else if (live_logging() && live_log_append(&state->log, bytes, blocks, counts, path))
        counted_now = false;
    else
        counted_now = live_change_settled(state, bytes, blocks, counts, path, seen);
    logged += !counted_now;
    if (counted_now)
        thread_state_peak_change(state, counts, path, *seen, bytes, blocks);
    spin_unlock(&state->lock);
    return counted_now;
}

static uint64_t random_state = 88172645463325252u;

static uint64_t next_random(void)
{
    random_state ^= random_state << 13;
    random_state ^= random_state >> 7;
    random_state ^= random_state << 17;
    return random_state;
}

/* Every path's figures at the peak, summed over the threads as the writer
 * sums them, against the known ones; bins are paths here. */
static bool peak_figures_agree(const int64_t known_bytes[PATHS], const int64_t known_blocks[PATHS])
{
    uint64_t highest = (uint64_t)live_ledger.highest_bytes;
    for (unsigned path = 0; path < PATHS; path++) {
        int64_t sum_bytes = 0, sum_blocks = 0, bin_bytes = 0, bin_blocks = 0;
        for (int n = 0; n < THREADS; n++) {
            int64_t bytes, blocks;
            peak_settled(&records[n][path].peak, highest, &bytes, &blocks);
            sum_bytes += bytes;
            sum_blocks += blocks;
            peak_settled(&bins[n][path], highest, &bytes, &blocks);
            bin_bytes += bytes;
            bin_blocks += blocks;
        }
        if (sum_bytes != known_bytes[path] || sum_blocks != known_blocks[path] || bin_bytes != known_bytes[path] ||
            bin_blocks != known_blocks[path]) {
            printf("path %u at the peak: %lld bytes in %lld blocks (bin %lld in %lld), not %lld in %lld\n", path,
                   (long long)sum_bytes, (long long)sum_blocks, (long long)bin_bytes, (long long)bin_blocks,
                   (long long)known_bytes[path], (long long)known_blocks[path]);
            return false;
        }
    }
    return true;
}

int main(void)
{
    for (int n = 0; n < THREADS; n++) {
        states[n].next = n + 1 < THREADS ? &states[n + 1] : NULL;
        states[n].bin_peak = bins[n];
    }
    static int64_t sizes[MOST_BLOCKS];
    static unsigned paths[MOST_BLOCKS];
    int64_t path_bytes[PATHS] = {0}, path_blocks[PATHS] = {0}, peak_bytes[PATHS] = {0}, peak_blocks[PATHS] = {0};
    unsigned live_count = 0;
    int64_t live_bytes = 0, highest_bytes = 0, highest_blocks = 0;
    for (long step = 0; step <= STEPS; step++) {
        if (step % 50000 == 0 || step == STEPS) {
            live_merge_logs(false);
            if (live_ledger.highest_bytes != highest_bytes || live_ledger.highest_blocks != highest_blocks) {
                printf("%ld differs after the merge: highs %lld %lld, not %lld %lld\n", step,
                       (long long)live_ledger.highest_bytes, (long long)live_ledger.highest_blocks,
                       (long long)highest_bytes, (long long)highest_blocks);
                return 0;
            }
            if (!peak_figures_agree(peak_bytes, peak_blocks)) {
                printf("%ld differs after the merge\n", step);
                return 0;
            }
            if (step == STEPS)
                break;
        }
        struct thread_state *state = &states[next_random() % THREADS];
        uint64_t draw = next_random();
        /* Phases of growth and of shrinking, so that highs come again and
         * again, with long stretches below them. */
        bool growing = (step / 5000) % 3 != 1;
        bool allocate = live_count == 0 || (live_count < MOST_BLOCKS && draw % 100 < (growing ? 60u : 35u));
        int64_t bytes, blocks;
        unsigned path;
        if (allocate) {
            bytes = (int64_t)(next_random() % 3000);
            path = (unsigned)(next_random() % PATHS);
            sizes[live_count] = bytes;
            paths[live_count++] = path;
            blocks = 1;
        } else {
            unsigned index = (unsigned)(next_random() % live_count);
            bytes = -sizes[index];
            path = paths[index];
            sizes[index] = sizes[--live_count];
            paths[index] = paths[live_count];
            blocks = -1;
        }
        int64_t before = highest_bytes;
        live_bytes += bytes;
        path_bytes[path] += bytes;
        path_blocks[path] += blocks;
        if (live_bytes > highest_bytes) {
            highest_bytes = live_bytes;
            memcpy(peak_bytes, path_bytes, sizeof peak_bytes);
            memcpy(peak_blocks, path_blocks, sizeof peak_blocks);
        }
        if ((int64_t)live_count > highest_blocks)
            highest_blocks = live_count;
        struct peak_change seen;
        bool counted_now = change(state, path, bytes, blocks, &seen);
        uint64_t now_bytes, now_blocks;
        live_now(&now_bytes, &now_blocks);
        bool highs_known = !live_logging();
        if ((highs_known && (live_ledger.highest_bytes != highest_bytes ||
                             live_ledger.highest_blocks != highest_blocks)) ||
            (counted_now && (seen.before != (uint64_t)before || seen.after != (uint64_t)highest_bytes)) ||
            now_bytes != (uint64_t)live_bytes || now_blocks != live_count) {
            printf("%ld differs: highs %lld %lld (%lld %lld), saw %llu %llu (%lld %lld), now %llu %llu (%lld %u)\n",
                   step, (long long)live_ledger.highest_bytes, (long long)live_ledger.highest_blocks,
                   (long long)highest_bytes, (long long)highest_blocks, (unsigned long long)seen.before,
                   (unsigned long long)seen.after, (long long)before, (long long)highest_bytes,
                   (unsigned long long)now_bytes, (unsigned long long)now_blocks, (long long)live_bytes,
                   live_count);
            return 0;
        }
    }
    printf("%d exact %ld %ld\n", STEPS, within_grants, logged);
    return 0;
}
