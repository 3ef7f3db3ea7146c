/* Memory over the run: the live bytes, the live blocks and the resident set
 * at points in time, at most TIMELINE_POINTS of them however long the run,
 * so that a run of days still writes a small file: when the points are
 * full, each two neighbours become one (the one with more live bytes, so
 * that no high is lost) and the points come half as often.  The peak itself
 * is exact elsewhere (peak.h); the points show the way there and after,
 * to the moment the file is written. */
#ifndef MPROF_TIMELINE_H
#define MPROF_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#define TIMELINE_POINTS 2000u /* even */
/* The first points come this often; each merge doubles it.  A test may
 * define it smaller, to fill the points in a moment. */
#ifndef TIMELINE_FIRST_INTERVAL_NS
#define TIMELINE_FIRST_INTERVAL_NS 1000000u
#endif

struct timeline_point {
    uint64_t ns; /* from the start */
    uint64_t live_bytes;
    uint64_t live_blocks;
    uint64_t resident_bytes; /* the process's resident set, /proc/self/statm */
    uint64_t mapped_bytes;   /* the regions the program mapped itself (mapped.h) */
};

/* Forgets every point: at the start, and in a fork child. */
void timeline_start(uint64_t start_ns);
/* From the hot path, now and then: takes a point if its time has come. */
void timeline_tick(void);
/* Copies the points, oldest first, into out (TIMELINE_POINTS + 1 of room),
 * the moment of the call the last of them; returns how many.  bounded: from
 * a signal handler, none rather than wait on a lock the interrupted thread
 * may hold. */
unsigned timeline_points(struct timeline_point *out, bool bounded);

#endif
