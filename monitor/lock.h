/* A spinlock for the monitor's short critical sections.  Never held across
 * a call into the real allocator, the unwinder or the dynamic loader, so a
 * holder is always about to release it; pthread mutexes would cost a
 * function call and could allocate in some libcs. */
#ifndef MPROF_LOCK_H
#define MPROF_LOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct {
    atomic_int held;
} spinlock_t;

#define SPINLOCK_INIT {0}

static inline void spin_lock(spinlock_t *lock)
{
    for (unsigned spins = 0;; spins++) {
        if (!atomic_exchange_explicit(&lock->held, 1, memory_order_acquire))
            return;
        while (atomic_load_explicit(&lock->held, memory_order_relaxed)) {
            if (++spins > 256)
                sched_yield(); /* the holder may have been descheduled */
            else
                __builtin_ia32_pause();
        }
    }
}

/* spin_lock for a lock no other thread can take meanwhile, the caller
 * knowing it is the process's only thread: a plain store instead of the
 * locked exchange, which drains the store buffer (8% of monitor_alloc's
 * samples on sqlite3).  A signal handler on this thread that tries the lock
 * sees it held all the same: the compiler keeps the store before what it
 * guards. */
static inline void spin_lock_alone(spinlock_t *lock)
{
    atomic_store_explicit(&lock->held, 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
}

static inline bool spin_trylock(spinlock_t *lock)
{
    return !atomic_exchange_explicit(&lock->held, 1, memory_order_acquire);
}

/* For a writer in a signal handler: the thread it interrupted may hold the
 * lock and will never release it, so it gives up after some milliseconds
 * of yielding instead of deadlocking. */
static inline bool spin_lock_bounded(spinlock_t *lock)
{
    for (unsigned spins = 0; spins < 20000; spins++) {
        if (spin_trylock(lock))
            return true;
        sched_yield();
    }
    return false;
}

/* spin_lock, or spin_lock_bounded from a signal handler. */
static inline bool spin_lock_within(spinlock_t *lock, bool bounded)
{
    if (bounded)
        return spin_lock_bounded(lock);
    spin_lock(lock);
    return true;
}

static inline void spin_unlock(spinlock_t *lock)
{
    atomic_store_explicit(&lock->held, 0, memory_order_release);
}

/* Used in a fork child, where the holder no longer exists. */
static inline void spin_reset(spinlock_t *lock)
{
    atomic_store_explicit(&lock->held, 0, memory_order_relaxed);
}

#endif
