/* The live figures' ledger (monitor/live.c) on its own, driven the way
 * record.c drives it, by four made-up threads taking turns at random:
 * allocations of random sizes, and frees of random live blocks, whichever
 * thread made them.  Since the turns run one at a time, the live figures
 * and their highs are known exactly at every step; after each, the ledger's
 * highs, what the change saw of the peak, and live_now() are compared with
 * them.  Prints the number of steps checked, then "exact" and how many
 * changes fit their thread's grant, or the first step that differs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live.h"
#include "thread.h"

#define THREADS 4
#define STEPS 2000000
#define MOST_BLOCKS 4096

static struct thread_state states[THREADS];
static long within_grants;

struct thread_state *thread_states_newest(void)
{
    return &states[0];
}

/* record.c's order: the grant first, the ledger when it does not fit. */
static struct peak_change change(struct thread_state *state, int64_t bytes, int64_t blocks)
{
    struct peak_change seen;
    spin_lock(&state->lock);
    if (live_change_granted(&state->grant, bytes, blocks, &seen))
        within_grants++;
    else
        seen = live_change_settled(state, bytes, blocks);
    spin_unlock(&state->lock);
    return seen;
}

static uint64_t random_state = 88172645463325252u;

static uint64_t next_random(void)
{
    random_state ^= random_state << 13;
    random_state ^= random_state >> 7;
    random_state ^= random_state << 17;
    return random_state;
}

int main(void)
{
    for (int n = 0; n + 1 < THREADS; n++)
        states[n].next = &states[n + 1];
    static int64_t sizes[MOST_BLOCKS];
    unsigned live_count = 0;
    int64_t live_bytes = 0, highest_bytes = 0, highest_blocks = 0;
    for (long step = 0; step < STEPS; step++) {
        struct thread_state *state = &states[next_random() % THREADS];
        uint64_t draw = next_random();
        /* Phases of growth and of shrinking, so that highs come again and
         * again, with long stretches below them. */
        bool growing = (step / 5000) % 3 != 1;
        bool allocate = live_count == 0 || (live_count < MOST_BLOCKS && draw % 100 < (growing ? 60u : 35u));
        int64_t bytes, blocks;
        if (allocate) {
            bytes = (int64_t)(next_random() % 3000);
            sizes[live_count++] = bytes;
            blocks = 1;
        } else {
            unsigned index = (unsigned)(next_random() % live_count);
            bytes = -sizes[index];
            sizes[index] = sizes[--live_count];
            blocks = -1;
        }
        int64_t before = highest_bytes;
        live_bytes += bytes;
        if (live_bytes > highest_bytes)
            highest_bytes = live_bytes;
        if ((int64_t)live_count > highest_blocks)
            highest_blocks = live_count;
        struct peak_change seen = change(state, bytes, blocks);
        uint64_t now_bytes, now_blocks;
        live_now(&now_bytes, &now_blocks);
        if (live_ledger.highest_bytes != highest_bytes || live_ledger.highest_blocks != highest_blocks ||
            seen.before != (uint64_t)before || seen.after != (uint64_t)highest_bytes ||
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
    printf("%d exact %ld\n", STEPS, within_grants);
    return 0;
}
