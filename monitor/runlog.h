/* The record mprof run reads after the program ends: a file per process
 * image in MPROF_RUN_DIR, made as the image starts and added to as it writes
 * data files, so that mprof run can list the files of the run and name the
 * processes that left none.  Nothing stays open between two records. */
#ifndef MPROF_RUNLOG_H
#define MPROF_RUNLOG_H

#include <stdbool.h>

/* A new image (the constructor) or a fork child starts. */
void runlog_start(void);
/* A file was written; kind is "final", "checkpoint" or "snapshot" for a
 * data file, "trace" for the allocation trace. */
void runlog_wrote(const char *kind, const char *path);
/* The image is about to exec without having written a file: the next image
 * of this process goes on for it. */
void runlog_exec(void);

#endif
