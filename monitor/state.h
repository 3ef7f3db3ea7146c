/* The monitor's process-wide state, shared by its core files. */
#ifndef MPROF_STATE_H
#define MPROF_STATE_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lsan_suppressions.h"
#include "options.h"
#include "paths.h"
#include "thread.h"

struct monitor_globals {
    /* Written by monitor_init before monitor_status turns ACTIVE, and by
     * the fork child handler while the child has one thread; read-only
     * everywhere else. */
    struct options options;
    pid_t pid;
    bool is_root;  /* the first process of the run: writes FILE, not FILE.PID */
    bool forked;   /* a fork child of a profiled process */
    bool attached; /* started by mprof attach in a running process (attach.c), not at its start */
    uint64_t start_unix_ns;
    uint64_t start_monotonic_ns;
    uint64_t start_tsc; /* read with start_monotonic_ns: the peak's time is a count of cycles from it */
    char executable[PATH_MAX];
    char *command_line; /* the arguments main gets, each ending in NUL */
    uint32_t command_line_size;
    struct lsan_suppressions lsan_suppressions; /* the program's own, for LeakSanitizer */
    /* Whether blocks from malloc, calloc, realloc and new carry a header
     * (header.h): asked for, and the real allocator is glibc's.  Never
     * cleared once set, not even when the monitor turns off: the blocks
     * that have one still do. */
    bool block_headers;

    /* Set before the program's second thread is created (cleared in a fork
     * child).  Until then a free may reach the allocator before the map:
     * no other thread can be handed the address in between. */
    atomic_bool threads_started;
    /* Set before a thread of the monitor's own first reads the threads'
     * states (the checkpoints' writer, a viewer's answers, the dump
     * signal's), by the thread that starts it (own_thread.h's starting
     * hook; cleared in a fork child): from then on a thread takes its state's
     * lock with a locked instruction even while it is the program's only
     * one.  The live figures need no lock still: only the program's
     * threads change them. */
    atomic_bool states_read_elsewhere;

    /* Changed rarely, read by the writer of a data file; a cache line of
     * their own, away from the fields above, which every allocation reads.
     * (The live figures are live.h's.) */
    _Alignas(64) atomic_uint_least64_t untracked_allocs;
    atomic_uint_least64_t early_allocs;
    atomic_uint_least64_t early_frees;
};

extern struct monitor_globals monitor;

/* The calling thread's state, made on its first allocation. */
struct thread_state *monitor_claim_state(void);

#endif
