/* mprof-replay run: plays a prepared file against the malloc in effect, or
 * against a do-nothing allocator (--null) whose figures the caller
 * subtracts, as the DJGPP benchmark did.  Everything the replay needs is
 * mapped and touched before the baseline is read, and nothing of the
 * replayer's own is allocated until the end, so that the footprint is the
 * allocator's. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "replay.h"

struct allocator {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void (*free)(void *);
};

/* The do-nothing allocator: one region, big enough for the largest block
 * at the largest alignment, handed out for every block, so that the
 * replay's writes land in real memory; nothing is copied or zeroed. */
static char *null_region; /* set before the threads start, read-only after */

__attribute__((noinline)) static void *null_malloc(size_t size)
{
    (void)size;
    return null_region;
}

__attribute__((noinline)) static void *null_calloc(size_t count, size_t size)
{
    (void)count, (void)size;
    return null_region;
}

__attribute__((noinline)) static void *null_realloc(void *old, size_t size)
{
    (void)old, (void)size;
    return null_region;
}

__attribute__((noinline)) static int null_posix_memalign(void **result, size_t alignment, size_t size)
{
    (void)alignment, (void)size;
    *result = null_region;
    return 0;
}

__attribute__((noinline)) static void null_free(void *block)
{
    (void)block;
}

/* One replay: set up by run_main before the threads start; the atomics
 * are shared by every replay thread. */
struct replay {
    const struct prepared_header *header;
    const struct prepared_event *events;
    _Atomic(void *) *objects;
    struct allocator allocator;
    int recorded_order;
    pthread_barrier_t start;
    atomic_uint_fast64_t turn;        /* --order recorded: the next event's order */
    atomic_uint_fast64_t done;        /* events played */
    atomic_int_fast64_t live_bytes, live_blocks;
    atomic_uint_fast64_t peak_bytes, peak_blocks;
    uint64_t sample_every;
    uint64_t (*samples)[4];           /* events done, live, resident, mapped */
    atomic_uint_fast64_t sample_count;
    uint64_t sample_capacity;
    int statm;                        /* /proc/self/statm, opened before the baseline */
    uint64_t baseline_resident, baseline_mapped;
    uint64_t digest;                  /* --order recorded only: one thread at a time writes it */
    uint64_t *sizes;                  /* of each object, as the trace gave it */
};

struct player {
    struct replay *replay;
    const struct prepared_thread *thread;
    uint64_t alloc_ticks, realloc_ticks, free_ticks;
    pthread_t id;
};

static void statm_read(int fd, uint64_t *mapped, uint64_t *resident)
{
    char text[128];
    ssize_t length = pread(fd, text, sizeof text - 1, 0);
    text[length > 0 ? length : 0] = '\0';
    unsigned long long size = 0, rss = 0;
    sscanf(text, "%llu %llu", &size, &rss);
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    *mapped = size * page;
    *resident = rss * page;
}

static void sample(struct replay *replay, uint64_t done)
{
    uint64_t index = atomic_fetch_add(&replay->sample_count, 1);
    if (index >= replay->sample_capacity)
        return;
    uint64_t mapped, resident;
    statm_read(replay->statm, &mapped, &resident);
    uint64_t *row = replay->samples[index];
    row[0] = done;
    row[1] = (uint64_t)atomic_load(&replay->live_bytes);
    row[2] = resident > replay->baseline_resident ? resident - replay->baseline_resident : 0;
    row[3] = mapped > replay->baseline_mapped ? mapped - replay->baseline_mapped : 0;
}

static void raise_to(atomic_uint_fast64_t *peak, uint64_t value)
{
    uint64_t seen = atomic_load_explicit(peak, memory_order_relaxed);
    while (value > seen && !atomic_compare_exchange_weak(peak, &seen, value))
        ;
}

static void *wait_for(_Atomic(void *) *slot)
{
    void *block;
    for (unsigned spins = 0; !(block = atomic_load_explicit(slot, memory_order_acquire)); spins++) {
        if (spins < 200)
            _mm_pause();
        else
            sched_yield();
    }
    return block;
}

/* A block of size 0 may come back NULL; its slot holds this instead, so
 * that a waiting thread sees it was returned. */
#define EMPTY_BLOCK ((void *)1)

static void touch(char *block, uint64_t size)
{
    if (size) {
        ((volatile char *)block)[0] = 1;
        ((volatile char *)block)[size - 1] = 1;
    }
}

/* Plays one event; the live figures change by what the trace said. */
static void play_event(struct player *player, const struct prepared_event *e)
{
    struct replay *replay = player->replay;
    const struct allocator *a = &replay->allocator;
    void *block = NULL;
    int64_t bytes = 0, blocks = 0;
    if (e->op == OP_FREE || e->op == OP_REALLOC) {
        uint32_t object = e->op == OP_FREE ? e->object : e->old_object;
        void *old = e->waits ? wait_for(&replay->objects[object])
                             : atomic_load_explicit(&replay->objects[object], memory_order_relaxed);
        old = old == EMPTY_BLOCK ? NULL : old;
        bytes = -(int64_t)replay->sizes[object];
        blocks = -1;
        uint64_t before = __rdtsc();
        if (e->op == OP_FREE) {
            a->free(old);
            player->free_ticks += __rdtsc() - before;
        } else {
            block = a->realloc(old, e->size);
            player->realloc_ticks += __rdtsc() - before;
        }
    } else {
        uint64_t before = __rdtsc();
        switch (e->op) {
        case OP_CALLOC:
            block = a->calloc(1, e->size);
            break;
        case OP_REALLOC_NULL:
            block = a->realloc(NULL, e->size);
            break;
        case OP_MEMALIGN: {
            size_t alignment = (size_t)1 << e->alignment_log2;
            if (alignment < sizeof(void *))
                alignment = sizeof(void *);
            if (a->posix_memalign(&block, alignment, e->size) != 0)
                block = NULL;
            break;
        }
        default:
            block = a->malloc(e->size);
        }
        player->alloc_ticks += __rdtsc() - before;
    }
    if (e->op != OP_FREE) {
        if (!block && e->size)
            fail(3, "run", "the allocator returned NULL for %" PRIu64 " bytes", e->size);
        touch(block, e->size);
        atomic_store_explicit(&replay->objects[e->object], block ? block : EMPTY_BLOCK, memory_order_release);
        bytes += (int64_t)e->size;
        blocks += 1;
    }
    int64_t live = atomic_fetch_add_explicit(&replay->live_bytes, bytes, memory_order_relaxed) + bytes;
    int64_t live_blocks = atomic_fetch_add_explicit(&replay->live_blocks, blocks, memory_order_relaxed) + blocks;
    raise_to(&replay->peak_bytes, (uint64_t)live);
    raise_to(&replay->peak_blocks, (uint64_t)live_blocks);
    if (replay->recorded_order)
        replay->digest = digest_add(replay->digest, (uint64_t)live);
    uint64_t done = atomic_fetch_add_explicit(&replay->done, 1, memory_order_relaxed) + 1;
    if (done % replay->sample_every == 0)
        sample(replay, done);
}

static void *play_thread(void *argument)
{
    struct player *player = argument;
    struct replay *replay = player->replay;
    const struct prepared_event *events = replay->events + player->thread->first;
    pthread_barrier_wait(&replay->start);
    for (uint64_t i = 0; i < player->thread->count; i++) {
        const struct prepared_event *e = &events[i];
        if (replay->recorded_order) {
            for (unsigned spins = 0; atomic_load_explicit(&replay->turn, memory_order_acquire) != e->order; spins++)
                if (spins > 200)
                    sched_yield();
                else
                    _mm_pause();
            play_event(player, e);
            atomic_store_explicit(&replay->turn, e->order + 1, memory_order_release);
        } else {
            play_event(player, e);
        }
    }
    return NULL;
}

static void *map_file(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fail(2, path, "%s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0)
        fail(2, path, "%s", strerror(errno));
    *size = (size_t)st.st_size;
    if (*size < sizeof(struct prepared_header))
        fail(2, path, "not a prepared file (too short)");
    void *bytes = mmap(NULL, *size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    close(fd);
    if (bytes == MAP_FAILED)
        fail(2, path, "%s", strerror(errno));
    return bytes;
}

static void *map_zeroed(size_t size, const char *what)
{
    void *region = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED)
        fail(2, what, "cannot map %zu bytes", size);
    memset(region, 0, size); /* touched now, not during the replay */
    return region;
}

static uint64_t status_kb(const char *status, const char *field)
{
    const char *at = strstr(status, field);
    return at ? strtoull(at + strlen(field), NULL, 10) : 0;
}

static uint64_t ns_of(const struct timespec *t)
{
    return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

static uint64_t cpu_ns(const struct timeval *t)
{
    return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_usec * 1000u;
}

int run_main(const char *path, int null_allocator, int recorded_order, unsigned sample_target)
{
    size_t size;
    const uint8_t *bytes = map_file(path, &size);
    const struct prepared_header *header = (const void *)bytes;
    if (memcmp(header->magic, PREPARED_MAGIC, 8))
        fail(2, path, "not a prepared file (bad magic)");
    if (header->version != PREPARED_VERSION)
        fail(2, path, "prepared file version %u, this replayer reads %u", header->version, PREPARED_VERSION);
    uint64_t tables = sizeof *header + (uint64_t)header->threads * sizeof(struct prepared_thread);
    if (header->threads > (1u << 20) || header->events > (size - sizeof *header) /
        sizeof(struct prepared_event) || tables + header->events * sizeof(struct prepared_event) != size)
        fail(2, path, "truncated or corrupt (its sizes do not add up)");
    const struct prepared_thread *threads = (const void *)(bytes + sizeof *header);
    const struct prepared_event *events = (const void *)(bytes + tables);
    for (uint32_t t = 0; t < header->threads; t++)
        if (threads[t].first > header->events || threads[t].count > header->events - threads[t].first)
            fail(2, path, "corrupt: thread %u's events lie outside the file", t);
    uint64_t max_size = 0;
    for (uint64_t i = 0; i < header->events; i++) {
        const struct prepared_event *e = &events[i];
        if (e->op > OP_FREE || e->object >= header->objects || e->order >= header->events ||
            (e->op == OP_REALLOC && e->old_object >= header->objects) || e->alignment_log2 > 30)
            fail(2, path, "corrupt: event %" PRIu64, i);
        if (e->op != OP_FREE && e->size > max_size)
            max_size = e->size;
    }

    struct replay *replay = map_zeroed(sizeof *replay, path);
    replay->header = header;
    replay->events = events;
    replay->recorded_order = recorded_order;
    replay->objects = map_zeroed(header->objects * sizeof *replay->objects, path);
    replay->sizes = map_zeroed(header->objects * sizeof *replay->sizes, path);
    for (uint64_t i = 0; i < header->events; i++)
        if (events[i].op != OP_FREE)
            replay->sizes[events[i].object] = events[i].size;
    replay->sample_every = (header->events + sample_target - 1) / sample_target;
    if (!replay->sample_every)
        replay->sample_every = 1;
    replay->sample_capacity = sample_target + 2;
    replay->samples = map_zeroed(replay->sample_capacity * sizeof *replay->samples, path);
    replay->digest = DIGEST_START;
    if (null_allocator) {
        /* One region serves every block: it holds the largest, aligned.
         * A size near 2^64 would wrap the sum to a small region. */
        size_t region;
        if (__builtin_add_overflow(max_size, header->max_alignment + 4096, &region))
            fail(2, path, "cannot map a block of %" PRIu64 " bytes", max_size);
        char *raw = map_zeroed(region, path);
        null_region = (char *)(((uintptr_t)raw + header->max_alignment - 1) & ~(uintptr_t)(header->max_alignment - 1));
        replay->allocator = (struct allocator){null_malloc, null_calloc, null_realloc, null_posix_memalign, null_free};
    } else {
        replay->allocator = (struct allocator){malloc, calloc, realloc, posix_memalign, free};
    }
    char library[4096] = "none";
    Dl_info info;
    if (!null_allocator && dladdr((void *)replay->allocator.malloc, &info) && info.dli_fname)
        snprintf(library, sizeof library, "%s", info.dli_fname);

    struct player *players = map_zeroed(header->threads * sizeof *players, path);
    if (pthread_barrier_init(&replay->start, NULL, header->threads + 1) != 0)
        fail(2, path, "cannot make a barrier");
    for (uint32_t t = 0; t < header->threads; t++) {
        players[t] = (struct player){replay, &threads[t], 0, 0, 0, 0};
        if (pthread_create(&players[t].id, NULL, play_thread, &players[t]) != 0)
            fail(2, path, "cannot start thread %u", t);
    }
    int status = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    replay->statm = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (status < 0 || replay->statm < 0)
        fail(2, "/proc/self", "%s", strerror(errno));
    statm_read(replay->statm, &replay->baseline_mapped, &replay->baseline_resident);

    struct rusage usage_before, usage_after;
    struct timespec wall_before, wall_after;
    getrusage(RUSAGE_SELF, &usage_before);
    clock_gettime(CLOCK_MONOTONIC, &wall_before);
    uint64_t tsc_before = __rdtsc();
    pthread_barrier_wait(&replay->start);
    for (uint32_t t = 0; t < header->threads; t++)
        pthread_join(players[t].id, NULL);
    uint64_t tsc_after = __rdtsc();
    clock_gettime(CLOCK_MONOTONIC, &wall_after);
    getrusage(RUSAGE_SELF, &usage_after);
    sample(replay, atomic_load(&replay->done));
    char text[8192];
    ssize_t length = pread(status, text, sizeof text - 1, 0);
    text[length > 0 ? length : 0] = '\0';
    uint64_t hwm = status_kb(text, "VmHWM:") * 1024, vm_peak = status_kb(text, "VmPeak:") * 1024;

    /* The counts as prepare reports them, from the events played. */
    struct prepared_figures played = {.events = atomic_load(&replay->done), .threads = header->threads};
    for (uint64_t i = 0; i < header->events; i++) {
        const struct prepared_event *e = &events[i];
        played.allocations += e->op != OP_FREE && e->op != OP_REALLOC;
        played.reallocs += e->op == OP_REALLOC;
        played.frees += e->op == OP_FREE;
        played.bytes_allocated += e->op != OP_FREE ? e->size : 0;
    }
    uint64_t wall_ns = ns_of(&wall_after) - ns_of(&wall_before);
    double ns_per_tick = tsc_after > tsc_before ? (double)wall_ns / (double)(tsc_after - tsc_before) : 0;
    uint64_t alloc_ticks = 0, realloc_ticks = 0, free_ticks = 0;
    for (uint32_t t = 0; t < header->threads; t++) {
        alloc_ticks += players[t].alloc_ticks;
        realloc_ticks += players[t].realloc_ticks;
        free_ticks += players[t].free_ticks;
    }
    uint64_t samples = atomic_load(&replay->sample_count);
    samples = samples < replay->sample_capacity ? samples : replay->sample_capacity;
    /* Gloger's waste is taken at the peak allocation: the sampled moment
     * the most bytes were live.  (At the most resident moment instead, an
     * allocator that keeps freed pages would be measured after the
     * program had freed everything.) */
    uint64_t live_at_peak = 0;
    for (uint64_t i = 0; i < samples; i++)
        if (replay->samples[i][1] > live_at_peak)
            live_at_peak = replay->samples[i][1];
    printf("{\"allocator_library\": \"%s\", \"order\": \"%s\", \"events\": %" PRIu64 ", \"allocations\": %" PRIu64
           ", \"frees\": %" PRIu64 ", \"reallocs\": %" PRIu64 ", \"bytes_allocated\": %" PRIu64
           ", \"peak_live_bytes\": %" PRIu64 ", \"peak_live_blocks\": %" PRIu64 ", ",
           library, recorded_order ? "recorded" : "threads", played.events, played.allocations, played.frees,
           played.reallocs, played.bytes_allocated, (uint64_t)atomic_load(&replay->peak_bytes),
           (uint64_t)atomic_load(&replay->peak_blocks));
    if (recorded_order)
        printf("\"live_digest\": \"%016" PRIx64 "\", ", replay->digest);
    else
        printf("\"live_digest\": null, ");
    printf("\"wall_ns\": %" PRIu64 ", \"user_ns\": %" PRIu64 ", \"system_ns\": %" PRIu64 ", \"alloc_ns\": %" PRIu64
           ", \"realloc_ns\": %" PRIu64 ", \"free_ns\": %" PRIu64 ", \"baseline_resident_bytes\": %" PRIu64
           ", \"baseline_mapped_bytes\": %" PRIu64 ", \"peak_resident_bytes\": %" PRIu64
           ", \"peak_mapped_bytes\": %" PRIu64 ", \"live_at_peak_bytes\": %" PRIu64 ", \"samples\": [",
           wall_ns, cpu_ns(&usage_after.ru_utime) - cpu_ns(&usage_before.ru_utime),
           cpu_ns(&usage_after.ru_stime) - cpu_ns(&usage_before.ru_stime), (uint64_t)(alloc_ticks * ns_per_tick),
           (uint64_t)(realloc_ticks * ns_per_tick), (uint64_t)(free_ticks * ns_per_tick), replay->baseline_resident,
           replay->baseline_mapped, hwm > replay->baseline_resident ? hwm - replay->baseline_resident : 0,
           vm_peak > replay->baseline_mapped ? vm_peak - replay->baseline_mapped : 0, live_at_peak);
    for (uint64_t i = 0; i < samples; i++)
        printf("%s[%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 "]", i ? ", " : "", replay->samples[i][0],
               replay->samples[i][1], replay->samples[i][2], replay->samples[i][3]);
    printf("]}\n");
    return 0;
}
