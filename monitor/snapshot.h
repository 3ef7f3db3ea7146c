/* Writing the data file: gather every thread's aggregates, then emit the
 * sections of mprof(5). */
#ifndef MPROF_SNAPSHOT_H
#define MPROF_SNAPSHOT_H

#include <stdbool.h>

enum snapshot_kind {
    /* The process is ending or about to exec: the process's file. */
    SNAPSHOT_FINAL,
    /* While it runs, in case it never ends cleanly: the process's file too,
     * replaced by the next checkpoint and by the final write. */
    SNAPSHOT_CHECKPOINT,
    /* Asked for with the dump signal or mprof_dump(): a file of its own,
     * the process's name with .snapN after it. */
    SNAPSHOT_ON_DEMAND,
    /* Asked for by a viewer (watch.h): to the file it named, replaced by
     * the next.  A failure to write it is said nowhere: the viewer sees no
     * answer, and the process's own files keep their one failure line. */
    SNAPSHOT_WATCH,
};

struct snapshot_request {
    enum snapshot_kind kind;
    /* Only if the process allocated or freed anything (before an exec, a
     * fork child that only execs leaves no file). */
    bool if_active;
    /* A final write as this signal ends the process, from its handler:
     * locks are taken with a bound, since the interrupted code may hold
     * one.  0 otherwise. */
    int end_signal;
    /* SNAPSHOT_WATCH's file, an absolute name. */
    const char *path;
    /* The writer's thread, when the file classifies the live blocks
     * (leak_scan.h); NULL: it does not. */
    const struct leak_caller *classify;
};

/* Writes the file; false when nothing was written.  Serialised: concurrent
 * calls write one after the other, except a watched snapshot, which is
 * skipped while another write is under way, and a checkpoint after the
 * final file. */
bool snapshot_write(const struct snapshot_request *request);
/* In a fork child: the next write chooses the child's own name. */
void snapshot_forget_output(void);

#endif
