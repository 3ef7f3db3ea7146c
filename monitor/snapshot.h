/* Writing the data file: gather every thread's aggregates, then emit the
 * sections of mprof(5). */
#ifndef MPROF_SNAPSHOT_H
#define MPROF_SNAPSHOT_H

#include <stdbool.h>

/* Writes this process's data file; final when the process exits or execs.
 * if_active: only if the process allocated or freed anything (before an
 * exec, a fork child that only execs leaves no file).  Serialised:
 * concurrent calls write one after the other. */
void snapshot_write(bool final, bool if_active);
/* In a fork child: the next write chooses the child's own name. */
void snapshot_forget_output(void);

#endif
