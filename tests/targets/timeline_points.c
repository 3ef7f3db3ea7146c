/* The monitor's memory-over-time points (monitor/timeline.c) on their own,
 * with points due every microsecond (TIMELINE_FIRST_INTERVAL_NS, set on the
 * command line) so that they fill, and merge, in a moment.  The live bytes
 * are set by hand: 1000 plus the number of the tick, and in the middle of
 * the run a high of 1,000,000,000 held by exactly one point (it lasts until
 * a point is taken of it), which every merge must keep.  After ticking for
 * 50 ms and a million times, with 7 bytes live, prints the points' count,
 * whether their times increase, how many hold the high, the last point's
 * live bytes and whether its resident set was read. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "live.h"
#include "mapped.h"
#include "timeline.h"

/* The live figures, as live.c would give them: set by hand. */
static uint64_t hand_set_live;

void live_now(uint64_t *bytes, uint64_t *blocks)
{
    *bytes = hand_set_live;
    *blocks = 0;
}

/* And the program's own mappings: none. */
uint64_t mapped_live_bytes(void)
{
    return 0;
}

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

int main(void)
{
    static struct timeline_point points[TIMELINE_POINTS + 1];
    const uint64_t high = 1000000000u;
    uint64_t start = now_ns();
    timeline_start(start);
    uint64_t tick = 0;
    int high_taken = 0;
    /* 50 ms and a million ticks: on a loaded machine 50 ms may hold only a
     * few hundred ticks, too few to fill the points, where a million take
     * tens of milliseconds of the program's own time, each microsecond of
     * which is due a point. */
    while (now_ns() - start < 50000000u || tick < 1000000u) {
        hand_set_live = 1000 + tick++;
        timeline_tick();
        if (!high_taken && now_ns() - start > 25000000u && tick > 500000u) {
            /* The high lasts until one point holds it, and no longer. */
            hand_set_live = high;
            while (!high_taken) {
                timeline_tick();
                unsigned taken = timeline_points(points, 0);
                high_taken = taken >= 2 && points[taken - 2].live_bytes == high;
            }
        }
    }
    hand_set_live = 7; /* what is live when the points are read */
    unsigned count = timeline_points(points, 0);
    int increasing = 1;
    unsigned highs = 0;
    for (unsigned i = 0; i < count; i++) {
        if (i && points[i].ns <= points[i - 1].ns)
            increasing = 0;
        highs += points[i].live_bytes == high;
    }
    printf("%u %d %u %llu %d\n", count, increasing, highs, (unsigned long long)points[count - 1].live_bytes,
           points[count - 1].resident_bytes > 0);
    return 0;
}
