/* The monitor's core, between the interposed functions (preload.c,
 * newdelete.c) and the aggregates.  Wrappers follow one pattern: make sure
 * the monitor is ready, call the real function, record. */
#ifndef MPROF_MONITOR_H
#define MPROF_MONITOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compiler.h"
#include "options.h"
#include "ptrmap.h"
#include "thread.h"

enum monitor_status {
    MONITOR_UNINITIALISED, /* no call has reached the monitor yet */
    MONITOR_STARTING,      /* one thread is resolving the real functions */
    MONITOR_ACTIVE,        /* recording */
    MONITOR_OFF,           /* forwarding only: secure-execution, not followed, or finished */
};

/* Written by the first thread into monitor_init, read by every call. */
extern _Atomic int monitor_status;

/* Per-thread: the state, and the guard that sends the monitor's own
 * allocations (libunwind's, dlsym's) and those of signal handlers that
 * interrupt it straight to the real allocator. */
struct monitor_tls {
    struct thread_state *state;
    int busy;
};
extern __thread struct monitor_tls monitor_tls __attribute__((tls_model("initial-exec")));

/* Runs once; afterwards monitor_status is ACTIVE or OFF. */
void monitor_init(void);

/* Recording; each is called outside the real allocator and sets the busy
 * guard itself.  field is the summary counter of the entry point. */
void monitor_alloc(void *block, size_t size, enum mprof_summary_field field);
/* For free and delete, before the real free. */
void monitor_free(void *block, enum mprof_summary_field field);
/* Counts a call that allocated nothing (a failure, or realloc to 0). */
void monitor_count(enum mprof_summary_field field, enum mprof_summary_field second);
/* For realloc: take the old block out before the real realloc, so that no
 * other thread can be handed its address while it is still in the map. */
bool monitor_take(void *block, struct block_info *info);
/* The real realloc released the old block taken (known) or not. */
void monitor_released(bool known, const struct block_info *info);
void monitor_count_untracked(void);

/* Writes the data file now (see snapshot_write). */
void monitor_write(bool final, bool if_active);

/* Lifecycle hooks for preload.c's wrappers of exec and dlclose. */
void monitor_before_exec(void);
void monitor_before_dlclose(void);
void monitor_after_dlclose(void);

/* The environment to give an exec'd program: with MPROF_ROOT_PID=0 when
 * this process is the first of the run or envp lacks the variable, so the
 * new image writes FILE.PID; envp itself when nothing needs to change. */
char *const *monitor_exec_environment(char *const *envp);

#endif
