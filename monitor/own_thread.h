/* The monitor's own threads (the dump signal's, the watch's answers, the
 * checkpoints' writer): never the program's, so started through the real
 * pthread_create, with every signal blocked, so that none meant for the
 * program's threads comes to them, on stacks of the monitor's own memory. */
#ifndef MPROF_OWN_THREAD_H
#define MPROF_OWN_THREAD_H

#include <stdbool.h>

/* The monitor's own, registered at start while the process has one thread
 * (so that this layer does not call up into monitor.c).  starting: called
 * by the thread that starts one, before it exists (where it holds no lock
 * of the monitor's): from then on the program's threads take their states'
 * locks as another thread may read them.  entry: called first on each of
 * them, which makes the thread's allocations and frees, the C library's at
 * its end among them, none of the program's. */
typedef void own_thread_hook(void);
void own_thread_hooks(own_thread_hook *starting, own_thread_hook *entry);

/* What a thread of the monitor's runs, and its name (at most 15
 * characters), which top -H, gdb and /proc/PID/task/TID/comm show: a
 * developer who finds a thread the program did not start can tell it is
 * the monitor's. */
struct own_thread {
    void *(*run)(void *);
    const char *name;
};

/* false when the thread could not be started. */
bool own_thread_start(const struct own_thread *thread);

/* In a fork child, where the parent's threads do not exist. */
void own_thread_fork_child(void);

#endif
