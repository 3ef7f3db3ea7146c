/* The peak: the moment the live bytes reach their maximum, and what every
 * call path and size bin held then, exact and in O(1) per allocation.
 *
 * The live bytes and their maximum are one 16-byte word, changed by
 * cmpxchg16b, so that each allocation and free learns, with its own change,
 * the maximum before and after it: that places it before or after every
 * peak in the one order all threads agree on.  A record (a thread's figures
 * for a path or a bin) remembers the maximum it last saw; when it changes
 * and the maximum has grown since, a peak came while it stood still, so its
 * live figures then were the ones it still has: they are copied as its
 * figures at the peak before the change (memray's high-water marks, made
 * exact).  A change that sets a new peak copies its figures after it.  The
 * writer of a data file does the same for the records that have not changed
 * since the last peak.  No walk over all records when a new peak is reached. */
#ifndef MPROF_PEAK_H
#define MPROF_PEAK_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler.h"

struct live_word {
    uint64_t live;    /* bytes live now */
    uint64_t highest; /* the most ever live */
} __attribute__((aligned(16)));

/* What one change saw of the maximum. */
struct peak_change {
    uint64_t before; /* the maximum before the change */
    uint64_t after;  /* and after it: above before when the change set a new peak */
    uint64_t live;   /* the live bytes after it */
};

static inline bool cas_live_word(struct live_word *word, struct live_word *expected, struct live_word desired)
{
    bool swapped;
    __asm__ __volatile__("lock cmpxchg16b %1"
                         : "=@ccz"(swapped), "+m"(*word), "+a"(expected->live), "+d"(expected->highest)
                         : "b"(desired.live), "c"(desired.highest)
                         : "memory");
    return swapped;
}

/* Adds delta (negative for a free) to the live bytes; shared: another
 * thread may be changing them too (else a plain update, no locked
 * instruction: one thread cannot race itself).  guess: the word as the
 * calling thread last left it, the first value the exchange expects. */
static inline struct peak_change live_change(struct live_word *word, int64_t delta, bool shared,
                                             struct live_word *guess)
{
    if (!shared) {
        struct peak_change change = {word->highest, word->highest, word->live + (uint64_t)delta};
        if (change.live > change.after)
            change.after = change.live;
        __atomic_store_n(&word->live, change.live, __ATOMIC_RELAXED);
        __atomic_store_n(&word->highest, change.after, __ATOMIC_RELAXED);
        return change;
    }
    /* No plain read first: it would fetch the line shared, and the exchange
     * would then have to fetch it again to own it.  When the guess is
     * stale, the failed exchange brings the line owned with the value. */
    struct live_word seen = *guess;
    struct live_word next;
    do {
        next.live = seen.live + (uint64_t)delta;
        next.highest = next.live > seen.highest ? next.live : seen.highest;
    } while (!cas_live_word(word, &seen, next));
    *guess = next;
    return (struct peak_change){seen.highest, next.highest, next.live};
}

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
