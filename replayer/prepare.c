/* mprof-replay prepare: a trace's events become a prepared file.  Blocks
 * are named by address in the trace, and an address is reused once freed,
 * so the events are put in the one recorded order (by sequence number) and
 * each address is followed from allocation to free to give every block an
 * object number of its own. */
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "trace_read.h"

/* One change of the address map: an event's allocation, free, or one of a
 * realloc's two halves. */
struct step {
    uint64_t sequence;
    uint32_t event;
    uint8_t acquires; /* the second half of a realloc */
};

static int by_sequence(const void *a, const void *b)
{
    const struct step *x = a, *y = b;
    return x->sequence < y->sequence ? -1 : x->sequence > y->sequence;
}

/* Live addresses to their objects: open addressing with linear probing
 * and backward-shift deletion, so no tombstones pile up. */
struct address_map {
    uint64_t *addresses; /* 0: empty (no block lives at address 0) */
    uint32_t *objects;
    size_t capacity, used;
};

static size_t slot_of(const struct address_map *map, uint64_t address)
{
    uint64_t hash = address * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(hash >> 20) & (map->capacity - 1);
}

static void map_put(struct address_map *map, uint64_t address, uint32_t object);

static void map_grow(struct address_map *map)
{
    struct address_map old = *map;
    map->capacity = old.capacity ? old.capacity * 2 : 1024;
    map->addresses = calloc(map->capacity, sizeof *map->addresses);
    map->objects = calloc(map->capacity, sizeof *map->objects);
    map->used = 0;
    if (!map->addresses || !map->objects)
        fail(2, "prepare", "out of memory");
    for (size_t i = 0; i < old.capacity; i++)
        if (old.addresses[i])
            map_put(map, old.addresses[i], old.objects[i]);
    free(old.addresses);
    free(old.objects);
}

static void map_put(struct address_map *map, uint64_t address, uint32_t object)
{
    if (2 * (map->used + 1) > map->capacity)
        map_grow(map);
    size_t i = slot_of(map, address);
    while (map->addresses[i] && map->addresses[i] != address)
        i = (i + 1) & (map->capacity - 1);
    map->used += !map->addresses[i];
    map->addresses[i] = address;
    map->objects[i] = object;
}

/* The object at address, taken out of the map; NO_OBJECT if none. */
static uint32_t map_take(struct address_map *map, uint64_t address)
{
    if (!map->capacity || !address)
        return NO_OBJECT;
    size_t mask = map->capacity - 1, i = slot_of(map, address);
    while (map->addresses[i] != address) {
        if (!map->addresses[i])
            return NO_OBJECT;
        i = (i + 1) & mask;
    }
    uint32_t object = map->objects[i];
    for (size_t j = (i + 1) & mask; map->addresses[j]; j = (j + 1) & mask) {
        size_t home = slot_of(map, map->addresses[j]);
        /* j's entry may move to the hole at i if its home is not in (i, j]. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            map->addresses[i] = map->addresses[j];
            map->objects[i] = map->objects[j];
            i = j;
        }
    }
    map->addresses[i] = 0;
    map->used--;
    return object;
}

static unsigned log2_of(uint64_t alignment)
{
    unsigned log = 0;
    while (alignment > 1) {
        alignment >>= 1;
        log++;
    }
    return log;
}

int prepare_main(const char *trace_path, const char *out)
{
    struct trace trace;
    trace_read(trace_path, &trace);
    size_t count = trace.count;
    struct step *steps = malloc((2 * count + 1) * sizeof *steps);
    struct prepared_event *events = calloc(count + 1, sizeof *events);
    /* The thread that returned each object, for the waits. */
    uint32_t *owner = malloc((2 * count + 1) * sizeof *owner);
    uint8_t *dropped = calloc(count + 1, 1);
    if (!steps || !events || !owner || !dropped)
        fail(2, trace_path, "out of memory");
    size_t step_count = 0;
    for (size_t i = 0; i < count; i++) {
        steps[step_count++] = (struct step){trace.events[i].sequence, (uint32_t)i, 0};
        if (trace.events[i].op == 3)
            steps[step_count++] = (struct step){trace.events[i].sequence + trace.events[i].later, (uint32_t)i, 1};
    }
    qsort(steps, step_count, sizeof *steps, by_sequence);

    struct address_map map = {0};
    uint32_t objects = 0;
    struct prepared_figures figures = {.threads = trace.threads, .duration_ns = trace.duration_ns};
    uint64_t max_alignment = 16;
    for (size_t s = 0; s < step_count; s++) {
        const struct traced_event *t = &trace.events[steps[s].event];
        struct prepared_event *e = &events[steps[s].event];
        if (s && steps[s].sequence == steps[s - 1].sequence)
            fail(2, trace_path, "two events with sequence number %llu", (unsigned long long)steps[s].sequence);
        if (t->op == 2) {
            e->op = OP_FREE;
            e->object = map_take(&map, t->address);
            if (e->object == NO_OBJECT)
                dropped[steps[s].event] = 1;
            else
                e->waits = owner[e->object] != t->thread;
            continue;
        }
        if (t->op == 3 && !steps[s].acquires) {
            e->old_object = map_take(&map, t->old_address);
            e->waits = e->old_object != NO_OBJECT && owner[e->old_object] != t->thread;
            continue;
        }
        if (objects == NO_OBJECT)
            fail(2, trace_path, "more than %u blocks", NO_OBJECT - 1);
        e->object = objects++;
        owner[e->object] = t->thread;
        if (map_take(&map, t->address) != NO_OBJECT)
            fail(2, trace_path, "address %#llx returned again before it was freed", (unsigned long long)t->address);
        map_put(&map, t->address, e->object);
        e->size = t->size;
        if (t->op == 3) {
            e->op = e->old_object == NO_OBJECT ? OP_REALLOC_NULL : OP_REALLOC;
        } else if (t->function == 7) {
            e->op = OP_CALLOC;
        } else if (t->function == 8) {
            e->op = OP_REALLOC_NULL;
        } else if (t->alignment > 16 || t->function == 9) {
            e->op = OP_MEMALIGN;
            e->alignment_log2 = (uint8_t)log2_of(t->alignment ? t->alignment : 16);
            if (t->alignment > max_alignment)
                max_alignment = t->alignment;
        } else {
            e->op = OP_MALLOC;
        }
    }

    /* The recorded order of the kept events (by their first sequence
     * number), and the figures in that order, as a replay computes them. */
    uint64_t *sizes = calloc(objects + 1, sizeof *sizes);
    if (!sizes)
        fail(2, trace_path, "out of memory");
    uint64_t order = 0, live = 0, blocks = 0, digest = DIGEST_START;
    for (size_t s = 0; s < step_count; s++) {
        uint32_t index = steps[s].event;
        if (steps[s].acquires)
            continue;
        if (dropped[index]) {
            figures.unmatched_frees++;
            continue;
        }
        struct prepared_event *e = &events[index];
        e->order = order++;
        if (e->op == OP_FREE) {
            live -= sizes[e->object];
            blocks--;
            figures.frees++;
        } else {
            if (e->op == OP_REALLOC) {
                live -= sizes[e->old_object];
                blocks--;
                figures.reallocs++;
            } else {
                figures.allocations++;
            }
            sizes[e->object] = e->size;
            live += e->size;
            blocks++;
            figures.bytes_allocated += e->size;
            if (e->size > figures.max_size)
                figures.max_size = e->size;
        }
        if (live > figures.peak_live_bytes)
            figures.peak_live_bytes = live;
        if (blocks > figures.peak_live_blocks)
            figures.peak_live_blocks = blocks;
        digest = digest_add(digest, live);
    }
    figures.events = count; /* as the trace holds them; unmatched frees are not played */
    figures.live_digest = digest;

    /* Each thread's kept events, in its own order. */
    struct prepared_thread *threads = calloc(trace.threads + 1, sizeof *threads);
    if (!threads)
        fail(2, trace_path, "out of memory");
    size_t kept = 0;
    for (size_t i = 0; i < count; i++) {
        if (dropped[i])
            continue;
        uint32_t thread = trace.events[i].thread;
        if (!threads[thread].count)
            threads[thread].first = kept;
        threads[thread].count++;
        events[kept++] = events[i];
    }
    struct prepared_header header = {.version = PREPARED_VERSION, .threads = trace.threads, .events = kept,
                                     .objects = objects, .max_alignment = max_alignment, .figures = figures};
    memcpy(header.magic, PREPARED_MAGIC, 8);
    prepared_write(out, &header, threads, events);
    figures_print(stdout, &figures);
    return 0;
}
