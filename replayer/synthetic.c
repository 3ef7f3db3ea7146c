/* mprof-replay synthetic: Gloger's section 7 workload ("5,000,000 random
 * allocations/frees/reallocations with maximum chunk size of 1,000") as a
 * prepared file, so that allocators can be compared with no program. */
#include <stdlib.h>
#include <string.h>

#include "replay.h"

/* Gloger does not say how many blocks were live at once; 10,000 slots keep
 * about 5 MB live at a mean size of 500, a heap well past the caches. */
#define SLOTS 10000u

static uint64_t next_random(uint64_t *state) /* splitmix64 */
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

int synthetic_main(const char *out, uint64_t operations, uint64_t seed, uint64_t max_size)
{
    if (operations >= NO_OBJECT)
        fail(2, out, "at most %u operations", NO_OBJECT - 1);
    struct prepared_event *events = calloc(operations + 1, sizeof *events);
    uint32_t slots[SLOTS];
    uint64_t sizes[SLOTS];
    if (!events)
        fail(2, out, "out of memory");
    for (unsigned i = 0; i < SLOTS; i++)
        slots[i] = NO_OBJECT;
    struct prepared_figures figures = {.events = operations, .threads = 1, .live_digest = DIGEST_START};
    uint64_t state = seed, live = 0, blocks = 0;
    uint32_t objects = 0;
    for (uint64_t n = 0; n < operations; n++) {
        struct prepared_event *e = &events[n];
        e->order = n;
        unsigned slot = (unsigned)(next_random(&state) % SLOTS);
        uint64_t size = 1 + next_random(&state) % max_size;
        if (slots[slot] == NO_OBJECT) {
            *e = (struct prepared_event){.size = size, .order = n, .object = objects, .op = OP_MALLOC};
            figures.allocations++;
        } else if (next_random(&state) & 1) {
            *e = (struct prepared_event){.order = n, .object = slots[slot], .op = OP_FREE};
            live -= sizes[slot];
            blocks--;
            slots[slot] = NO_OBJECT;
            figures.frees++;
            figures.live_digest = digest_add(figures.live_digest, live);
            continue;
        } else {
            *e = (struct prepared_event){.size = size, .order = n, .object = objects, .old_object = slots[slot],
                                         .op = OP_REALLOC};
            live -= sizes[slot];
            blocks--;
            figures.reallocs++;
        }
        slots[slot] = objects++;
        sizes[slot] = size;
        live += size;
        blocks++;
        figures.bytes_allocated += size;
        if (size > figures.max_size)
            figures.max_size = size;
        if (live > figures.peak_live_bytes)
            figures.peak_live_bytes = live;
        if (blocks > figures.peak_live_blocks)
            figures.peak_live_blocks = blocks;
        figures.live_digest = digest_add(figures.live_digest, live);
    }
    struct prepared_header header = {.version = PREPARED_VERSION, .threads = 1, .events = operations,
                                     .objects = objects, .max_alignment = 16, .figures = figures};
    memcpy(header.magic, PREPARED_MAGIC, 8);
    struct prepared_thread thread = {0, operations};
    prepared_write(out, &header, &thread, events);
    figures_print(stdout, &figures);
    return 0;
}
