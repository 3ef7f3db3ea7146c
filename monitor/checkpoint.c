/* Checkpoint timing, and the thread that writes them (see checkpoint.h). */
#include "checkpoint.h"

#include <errno.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "live.h"
#include "own_thread.h"

/* Below this much live memory a checkpoint would cost more than it could
 * save: the first one waits for it. */
#define FIRST_CHECKPOINT_BYTES (UINT64_C(1) << 20)

atomic_uint_least64_t checkpoint_due_bytes = UINT64_MAX;
/* Monotonic time of the next interval checkpoint; UINT64_MAX while none is
 * due or one has been asked for.  Whichever thread moves a due value to
 * UINT64_MAX asks for the checkpoint; the write sets both again. */
static atomic_uint_least64_t due_ns = UINT64_MAX;

/* What the writing thread is asked for: set by the threads that moved a due
 * value, cleared by the writing thread as it starts a write. */
#define WANT_HIGH 1u
#define WANT_TIMED 2u
static atomic_uint wanted;
/* Whether the writing thread runs: set by the thread that starts it,
 * cleared by the thread itself once nothing is asked of it. */
static atomic_bool writing;

/* What a checkpoint costs the program is the processor time of its write,
 * on a core the program could have used, its threads waiting only while
 * their own figures are read; a write that waits for a core or the disk
 * costs it nothing.  So after a write that took t of its thread's
 * processor time, a new high waits t (the writing thread works at most
 * half the time while memory grows), and until the run is fifty times as
 * long as all the checkpoints written so far and one more as long as the
 * last took, which keeps a program whose data grows as it runs, each write
 * longer than the one before, near 2% (GCC's cc1plus: writes of 2, 8, 37
 * and 85 ms); the interval's checkpoints wait 50 t besides.  A high that
 * comes sooner is written when the time comes, with whatever high has been
 * reached by then. */
#define SPACING_FACTOR 50
static atomic_uint_least64_t high_not_before_ns, timed_not_before_ns;
/* The processor time the checkpoints of this process took to write; added
 * to by the thread that wrote one. */
static atomic_uint_least64_t spent_ns;
/* Written by checkpoint_start only, while one thread runs. */
static unsigned growth_permille;
static uint64_t interval_ns;
static uint64_t run_start_ns;
static pid_t own_pid;
static checkpoint_writer *write_file;

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static uint64_t now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

void checkpoint_start(const struct options *options, uint64_t start_ns, pid_t pid, checkpoint_writer *writer)
{
    growth_permille = options->checkpoint_growth_permille;
    interval_ns = (uint64_t)options->checkpoint_interval_ms * 1000000u;
    atomic_store(&checkpoint_due_bytes, growth_permille ? FIRST_CHECKPOINT_BYTES : UINT64_MAX);
    atomic_store(&due_ns, interval_ns ? start_ns + interval_ns : UINT64_MAX);
    atomic_store(&high_not_before_ns, 0);
    atomic_store(&timed_not_before_ns, 0);
    atomic_store(&spent_ns, 0);
    atomic_store(&wanted, 0);
    atomic_store(&writing, false); /* a fork child has no thread of its parent's */
    run_start_ns = start_ns;
    own_pid = pid;
    write_file = writer;
}

static uint64_t later(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* The margin above high, past which the next peak checkpoint is due. */
static uint64_t due_after(uint64_t high)
{
    uint64_t next;
    if (__builtin_mul_overflow(high / 1000, growth_permille, &next))
        return UINT64_MAX - 1; /* never reached: no more peak checkpoints */
    next += high % 1000 * growth_permille / 1000;
    return later(next, FIRST_CHECKPOINT_BYTES);
}

/* Writes, then sets the due values from what the file holds (at least the
 * high before the write): the next peak checkpoint at the margin above it,
 * the next timed one an interval from now.  A failed write waits as long as
 * a written one. */
static void write_checkpoint(void)
{
    uint64_t high = (uint64_t)__atomic_load_n(&live_ledger.highest_bytes, __ATOMIC_RELAXED);
    uint64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    write_file();
    uint64_t took = clock_ns(CLOCK_THREAD_CPUTIME_ID) - start;
    uint64_t end = now_ns();
    uint64_t spent = atomic_fetch_add(&spent_ns, took) + took;
    uint64_t within_run = run_start_ns + (spent + took) * SPACING_FACTOR;
    atomic_store(&high_not_before_ns, later(end + took, within_run));
    atomic_store(&timed_not_before_ns, later(end + took * SPACING_FACTOR, within_run));
    if (growth_permille)
        atomic_store(&checkpoint_due_bytes, due_after(high));
    atomic_store(&due_ns, interval_ns ? end + interval_ns : UINT64_MAX);
}

/* A high reached while the file was written, past the margin: no
 * allocation may come to ask for it (the program may be asleep, stopped or
 * about to be killed), so the writing thread asks itself. */
static void ask_for_reached_high(void)
{
    uint64_t due = atomic_load(&checkpoint_due_bytes);
    uint64_t high = (uint64_t)__atomic_load_n(&live_ledger.highest_bytes, __ATOMIC_RELAXED);
    if (high >= due && atomic_compare_exchange_strong(&checkpoint_due_bytes, &due, UINT64_MAX))
        atomic_fetch_or(&wanted, WANT_HIGH);
}

static void sleep_until(uint64_t when_ns)
{
    struct timespec until = {.tv_sec = (time_t)(when_ns / 1000000000u), .tv_nsec = (long)(when_ns % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
        ;
}

static void *write_checkpoints(void *unused)
{
    (void)unused;
    for (;;) {
        if (atomic_load(&wanted) & WANT_HIGH)
            sleep_until(atomic_load(&high_not_before_ns));
        atomic_store(&wanted, 0);
        write_checkpoint();
        ask_for_reached_high();
        if (atomic_load(&wanted))
            continue;
        /* Gone: whoever asks next starts another.  A request made as the
         * flag is cleared is seen below, or sees the flag cleared. */
        atomic_store(&writing, false);
        if (!atomic_load(&wanted) || atomic_exchange(&writing, true))
            return NULL;
    }
}

static const struct own_thread writing_thread = {write_checkpoints, "mprof-checkpt"};

/* Has the writing thread write what; false when no checkpoint can be
 * written from here (a vfork child, which shares the parent's memory but
 * must not start threads), and the caller puts back what it moved. */
static bool ask(unsigned what)
{
    if (getpid() != own_pid)
        return false;
    int saved_errno = errno; /* the thread's start is not the program's business */
    atomic_fetch_or(&wanted, what);
    if (!atomic_exchange(&writing, true)) {
        if (!own_thread_start(&writing_thread)) {
            /* No thread to be had (a limit on threads or processes): this
             * thread writes, at once, as each high is still a margin
             * above the last. */
            atomic_store(&wanted, 0);
            write_checkpoint();
            atomic_store(&writing, false);
        }
    }
    errno = saved_errno;
    return true;
}

MONITOR_TEXT void checkpoint_after_peak(uint64_t live_bytes)
{
    uint64_t due = atomic_load(&checkpoint_due_bytes);
    if (live_bytes < due || !atomic_compare_exchange_strong(&checkpoint_due_bytes, &due, UINT64_MAX))
        return;
    if (!ask(WANT_HIGH)) {
        uint64_t taken = UINT64_MAX;
        atomic_compare_exchange_strong(&checkpoint_due_bytes, &taken, due);
    }
}

MONITOR_TEXT void checkpoint_tick(void)
{
    uint64_t due = atomic_load(&due_ns);
    if (due == UINT64_MAX)
        return;
    uint64_t now = now_ns();
    if (now < due || now < atomic_load(&timed_not_before_ns) ||
        !atomic_compare_exchange_strong(&due_ns, &due, UINT64_MAX))
        return;
    if (!ask(WANT_TIMED)) {
        uint64_t taken = UINT64_MAX;
        atomic_compare_exchange_strong(&due_ns, &taken, due);
    }
}
