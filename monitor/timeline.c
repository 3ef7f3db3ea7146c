/* Memory over the run (see timeline.h). */
#include "timeline.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compiler.h"
#include "live.h"
#include "mapped.h"
#include "lock.h"

/* Guarded by lock; next_ns is read without it, to decide cheaply that no
 * point is due.  A thread that finds the lock taken skips its tick: another
 * is taking the point. */
static struct {
    spinlock_t lock;
    uint64_t start_ns;
    uint64_t interval_ns;
    unsigned count;
    struct timeline_point points[TIMELINE_POINTS];
} timeline = {.lock = SPINLOCK_INIT};
static atomic_uint_least64_t next_ns = UINT64_MAX;

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

void timeline_start(uint64_t start_ns)
{
    spin_reset(&timeline.lock);
    timeline.start_ns = start_ns;
    timeline.interval_ns = TIMELINE_FIRST_INTERVAL_NS;
    timeline.count = 0;
    atomic_store(&next_ns, start_ns);
}

/* The resident set, from the second field of /proc/self/statm (pages); 0
 * when it cannot be read.  The descriptor lives only for this read. */
static uint64_t resident_bytes(void)
{
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char text[128];
    ssize_t length = read(fd, text, sizeof text - 1);
    close(fd);
    if (length <= 0)
        return 0;
    text[length] = '\0';
    const char *at = strchr(text, ' ');
    if (!at)
        return 0;
    uint64_t pages = 0;
    for (at++; *at >= '0' && *at <= '9'; at++)
        pages = pages * 10 + (uint64_t)(*at - '0');
    return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Each two neighbours become one: the one with more live bytes. */
static void halve(void)
{
    for (unsigned i = 0; i < TIMELINE_POINTS / 2; i++) {
        const struct timeline_point *first = &timeline.points[2 * i], *second = first + 1;
        timeline.points[i] = first->live_bytes > second->live_bytes ? *first : *second;
    }
    timeline.count = TIMELINE_POINTS / 2;
    timeline.interval_ns *= 2;
}

MONITOR_TEXT void timeline_tick(void)
{
    uint64_t now = now_ns();
    if (now < atomic_load_explicit(&next_ns, memory_order_relaxed) || !spin_trylock(&timeline.lock))
        return;
    if (now >= atomic_load_explicit(&next_ns, memory_order_relaxed)) {
        if (timeline.count == TIMELINE_POINTS)
            halve();
        uint64_t live_bytes, live_blocks;
        live_now(&live_bytes, &live_blocks);
        timeline.points[timeline.count++] = (struct timeline_point){now - timeline.start_ns, live_bytes, live_blocks,
                                                                    resident_bytes(), mapped_live_bytes()};
        atomic_store_explicit(&next_ns, now + timeline.interval_ns, memory_order_relaxed);
    }
    spin_unlock(&timeline.lock);
}

unsigned timeline_points(struct timeline_point *out, bool bounded)
{
    if (!spin_lock_within(&timeline.lock, bounded))
        return 0;
    unsigned count = timeline.count;
    memcpy(out, timeline.points, count * sizeof(*out));
    uint64_t start_ns = timeline.start_ns;
    spin_unlock(&timeline.lock);
    /* Points are taken as the program allocates: without this one, what it
     * freed after its last allocation and what it keeps at exit would not
     * be drawn.  Times must increase: a point of the same nanosecond gives
     * way to it. */
    uint64_t live_bytes, live_blocks;
    live_now(&live_bytes, &live_blocks);
    struct timeline_point moment = {now_ns() - start_ns, live_bytes, live_blocks, resident_bytes(),
                                    mapped_live_bytes()};
    if (count && moment.ns <= out[count - 1].ns)
        count--;
    out[count++] = moment;
    return count;
}
