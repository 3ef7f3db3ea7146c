/* The monitor's memory-over-time points (monitor/timeline.c) on their own,
 * with points due every microsecond (TIMELINE_FIRST_INTERVAL_NS, set on the
 * command line) so that they fill, and merge, in a moment.  The live bytes
 * are set by hand: 1000 plus the number of the tick, and for one
 * millisecond in the middle of the run (some points fall in it) a high of
 * 1,000,000,000.  Prints the points' count,
 * whether their times increase, the highest live bytes among them and the
 * interval between the last two points, after ticking for 50 ms. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "live.h"
#include "timeline.h"

/* The live figures, as live.c would give them: set by hand. */
static uint64_t hand_set_live;

void live_now(uint64_t *bytes, uint64_t *blocks)
{
    *bytes = hand_set_live;
    *blocks = 0;
}

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

int main(void)
{
    static struct timeline_point points[TIMELINE_POINTS];
    uint64_t start = now_ns();
    timeline_start(start);
    uint64_t tick = 0;
    uint64_t elapsed;
    while ((elapsed = now_ns() - start) < 50000000u) {
        uint64_t live = 1000 + tick++;
        if (elapsed > 25000000u && elapsed < 26000000u)
            live = 1000000000u;
        hand_set_live = live;
        timeline_tick();
    }
    unsigned count = timeline_points(points, 0);
    int increasing = 1;
    uint64_t highest = 0;
    for (unsigned i = 0; i < count; i++) {
        if (i && points[i].ns <= points[i - 1].ns)
            increasing = 0;
        if (points[i].live_bytes > highest)
            highest = points[i].live_bytes;
    }
    printf("%u %d %llu %d\n", count, increasing, (unsigned long long)highest, points[count - 1].resident_bytes > 0);
    return 0;
}
