/* Writing the data file: gather every thread's aggregates, then emit the
 * sections of mprof(5). */
#ifndef MPROF_SNAPSHOT_H
#define MPROF_SNAPSHOT_H

#include <stdbool.h>

/* Writes this process's data file; final when the process exits or execs.
 * Serialised: concurrent calls write one after the other. */
void snapshot_write(bool final);
/* In a fork child: the next write chooses the child's own name. */
void snapshot_forget_output(void);

#endif
