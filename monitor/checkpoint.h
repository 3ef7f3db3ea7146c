/* When the process's file is rewritten while it runs: as live memory passes
 * its last written high by a margin, and at an interval, so that a process
 * that never ends cleanly (SIGKILL, the OOM killer) leaves a file not far
 * behind.  Written by a thread of the monitor's own, which the allocating
 * thread only wakes: a burst that ends in a sleep, a stop or a kill is
 * written all the same, and the program's threads wait only while their
 * own figures are read. */
#ifndef MPROF_CHECKPOINT_H
#define MPROF_CHECKPOINT_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "compiler.h"
#include "options.h"

/* Live bytes at which the next checkpoint is due; UINT64_MAX while none is.
 * Read by every allocation. */
extern atomic_uint_least64_t checkpoint_due_bytes;

/* Allocations between two looks at the clock, a power of two. */
#define CHECKPOINT_CLOCK_EVERY 4096u

/* Writes the process's file as a checkpoint; the monitor's own, registered
 * at start so that this layer does not call up into monitor.c. */
typedef void checkpoint_writer(void);

/* At start-up and in a fork child, while the process has one thread. */
void checkpoint_start(const struct options *options, uint64_t now_ns, pid_t pid, checkpoint_writer *writer);
/* Live bytes reached checkpoint_due_bytes.  Not with a lock of the
 * monitor's held. */
void checkpoint_after_peak(uint64_t live_bytes);
/* Every CHECKPOINT_CLOCK_EVERY allocations of a thread; as
 * checkpoint_after_peak. */
void checkpoint_tick(void);

#endif
