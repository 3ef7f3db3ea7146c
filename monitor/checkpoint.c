/* Checkpoint timing (see checkpoint.h). */
#include "checkpoint.h"

#include <time.h>

#include "live.h"
#include "monitor.h"
#include "state.h"

/* Below this much live memory a checkpoint would cost more than it could
 * save: the first one waits for it. */
#define FIRST_CHECKPOINT_BYTES (UINT64_C(1) << 20)

atomic_uint_least64_t checkpoint_due_bytes = UINT64_MAX;
/* Monotonic time of the next interval checkpoint, or of a high that came
 * too soon after the last checkpoint; UINT64_MAX while none is.  Whichever
 * thread moves a due value to UINT64_MAX writes the checkpoint. */
static atomic_uint_least64_t due_ns = UINT64_MAX;
/* No checkpoint before this time: each waits fifty times as long as the
 * last one took to write, and until the run is fifty times as long as all
 * the checkpoints written so far and one more as long as the last took.
 * The first keeps a burst of new highs from writing one after another;
 * the second keeps the checkpoints of a program whose data grows as it
 * runs, each longer than the one before, from taking more than 2% of its
 * run (GCC's cc1plus: 2, 8 and 37 ms, then 85 ms 1.5 s before its end,
 * 3.3% of the run, with the first alone). */
static atomic_uint_least64_t not_before_ns;
#define SPACING_FACTOR 50
/* The time the checkpoints of this process took to write; added to by
 * whichever thread wrote one. */
static atomic_uint_least64_t spent_ns;
/* Written by checkpoint_start only, while one thread runs. */
static unsigned growth_permille;
static uint64_t interval_ns;
static uint64_t run_start_ns;

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

void checkpoint_start(const struct options *options, uint64_t start_ns)
{
    growth_permille = options->checkpoint_growth_permille;
    interval_ns = (uint64_t)options->checkpoint_interval_ms * 1000000u;
    atomic_store(&checkpoint_due_bytes, growth_permille ? FIRST_CHECKPOINT_BYTES : UINT64_MAX);
    atomic_store(&due_ns, interval_ns ? start_ns + interval_ns : UINT64_MAX);
    atomic_store(&not_before_ns, 0);
    atomic_store(&spent_ns, 0);
    run_start_ns = start_ns;
}

/* Writes, then sets both due values from what the file holds: the next
 * peak checkpoint at the margin above its high, the next timed one an
 * interval from now.  A failed write waits as long as a written one. */
static void write_checkpoint(void)
{
    uint64_t start = now_ns();
    monitor_write_checkpoint();
    uint64_t end = now_ns();
    uint64_t took = end - start;
    uint64_t spent = atomic_fetch_add(&spent_ns, took) + took;
    uint64_t after_this = end + took * SPACING_FACTOR;
    uint64_t within_run = run_start_ns + (spent + took) * SPACING_FACTOR;
    atomic_store(&not_before_ns, after_this > within_run ? after_this : within_run);
    if (growth_permille) {
        uint64_t high = (uint64_t)__atomic_load_n(&live_ledger.highest_bytes, __ATOMIC_RELAXED);
        uint64_t next;
        if (__builtin_mul_overflow(high / 1000, growth_permille, &next))
            next = UINT64_MAX - 1; /* never reached: no more peak checkpoints */
        else
            next += high % 1000 * growth_permille / 1000;
        atomic_store(&checkpoint_due_bytes, next > FIRST_CHECKPOINT_BYTES ? next : FIRST_CHECKPOINT_BYTES);
    }
    atomic_store(&due_ns, interval_ns ? end + interval_ns : UINT64_MAX);
}

MONITOR_TEXT void checkpoint_after_peak(uint64_t live_bytes)
{
    uint64_t due = atomic_load(&checkpoint_due_bytes);
    if (live_bytes < due || !atomic_compare_exchange_strong(&checkpoint_due_bytes, &due, UINT64_MAX))
        return;
    uint64_t not_before = atomic_load(&not_before_ns);
    if (now_ns() >= not_before) {
        write_checkpoint();
        return;
    }
    /* Too soon: the clock ticks write it when the time comes, with
     * whatever high has been reached by then. */
    uint64_t timed = atomic_load(&due_ns);
    while (not_before < timed && !atomic_compare_exchange_weak(&due_ns, &timed, not_before))
        ;
}

MONITOR_TEXT void checkpoint_tick(void)
{
    uint64_t due = atomic_load(&due_ns);
    if (due == UINT64_MAX)
        return;
    uint64_t now = now_ns();
    if (now < due || now < atomic_load(&not_before_ns))
        return;
    if (atomic_compare_exchange_strong(&due_ns, &due, UINT64_MAX))
        write_checkpoint();
}
