/* The peak: what every call path and size bin held at the moment the live
 * bytes reached their maximum, exact and in O(1) per allocation.
 *
 * Each change of the live figures learns, with the change itself, the
 * maximum before and after it (live.h): that places it before or after
 * every peak in the one order all threads agree on.  A record (a thread's
 * figures for a path or a bin) remembers the maximum it last saw; when it
 * changes and the maximum has grown since, a peak came while it stood
 * still, so its live figures then were the ones it still has: they are
 * copied as its figures at the peak before the change (memray's high-water
 * marks, made exact).  A change that sets a new peak copies its figures
 * after it.  The writer of a data file does the same for the records that
 * have not changed since the last peak.  No walk over all records when a
 * new peak is reached. */
#ifndef MPROF_PEAK_H
#define MPROF_PEAK_H

#include <stdbool.h>
#include <stdint.h>

/* What one change saw of the maximum. */
struct peak_change {
    uint64_t before; /* the maximum before the change */
    uint64_t after;  /* and after it: above before when the change set a new peak */
    uint64_t live;   /* the live bytes after it, when it set a new peak */
};

/* A record's live figures, and its figures at the latest peak it knows of. */
struct peak_figures {
    int64_t live_bytes, live_blocks; /* a thread's share: another thread may free its blocks */
    int64_t peak_bytes, peak_blocks;
    uint64_t seen; /* the maximum the record last saw */
};

static inline void peak_record(struct peak_figures *record, struct peak_change change, int64_t bytes, int64_t blocks)
{
    if (record->seen < change.before) {
        record->peak_bytes = record->live_bytes;
        record->peak_blocks = record->live_blocks;
    }
    record->live_bytes += bytes;
    record->live_blocks += blocks;
    if (change.after > change.before) {
        record->peak_bytes = record->live_bytes;
        record->peak_blocks = record->live_blocks;
    }
    record->seen = change.after;
}

/* The record's figures at the peak whose maximum is highest. */
static inline void peak_settled(const struct peak_figures *record, uint64_t highest, int64_t *bytes, int64_t *blocks)
{
    bool stood_still = record->seen < highest;
    *bytes = stood_still ? record->live_bytes : record->peak_bytes;
    *blocks = stood_still ? record->live_blocks : record->peak_blocks;
}

#endif
