/* When the process's file is rewritten while it runs: as live memory passes
 * its last written high by a margin, and at an interval, so that a process
 * that never ends cleanly (SIGKILL, the OOM killer) leaves a file not far
 * behind.  Written by the allocating thread itself: no thread of its own. */
#ifndef MPROF_CHECKPOINT_H
#define MPROF_CHECKPOINT_H

#include <stdatomic.h>
#include <stdint.h>

#include "compiler.h"
#include "options.h"

/* Live bytes at which the next checkpoint is due; UINT64_MAX while none is.
 * Read by every allocation. */
extern atomic_uint_least64_t checkpoint_due_bytes;

/* Allocations between two looks at the clock, a power of two. */
#define CHECKPOINT_CLOCK_EVERY 4096u

/* At start-up and in a fork child, while the process has one thread. */
void checkpoint_start(const struct options *options, uint64_t now_ns);
/* Live bytes reached checkpoint_due_bytes. */
void checkpoint_after_peak(uint64_t live_bytes);
/* Every CHECKPOINT_CLOCK_EVERY allocations of a thread. */
void checkpoint_tick(void);

#endif
