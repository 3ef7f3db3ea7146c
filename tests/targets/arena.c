/* An arena allocator, annotated for mprof (mprof.h) or, built with
 * -DVALGRIND_ANNOTATIONS, for memcheck (mprof_valgrind.h): one malloc'ed
 * arena, whose header is the pool's anchor, hands out 100,000 objects and
 * is reset, twice; the third round's objects are never freed, and the
 * program leaks one malloc'ed block of its own.
 *
 * Round r (1 to 3) allocates ROUND_OBJECTS[r] objects, alternately from
 * make_node (48 bytes) and make_edge (24 bytes), node first. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef VALGRIND_ANNOTATIONS
#include "mprof_valgrind.h"
#define POOL_CREATE(arena) VALGRIND_CREATE_MEMPOOL(arena, 0, 0)
#define POOL_ALLOC(arena, object, size) VALGRIND_MEMPOOL_ALLOC(arena, object, size)
#define POOL_RESET(arena) VALGRIND_MEMPOOL_TRIM(arena, (arena)->data, 0)
#define BACKING(allocation) (allocation)
#else
#include "mprof.h"
#define POOL_CREATE(arena) MPROF_POOL_CREATE(arena, "parser arena")
#define POOL_ALLOC(arena, object, size) MPROF_POOL_ALLOC(arena, object, size)
#define POOL_RESET(arena) MPROF_POOL_RESET(arena)
#define BACKING(allocation) MPROF_BACKING(allocation)
#endif

#define ARENA_BYTES (8u << 20)

struct arena {
    size_t used;
    size_t pad; /* the objects start 16-aligned */
    char data[];
};

static struct arena *arena_create(void)
{
    struct arena *arena = BACKING(malloc(sizeof(struct arena) + ARENA_BYTES));
    arena->used = 0;
    POOL_CREATE(arena);
    return arena;
}

static void *arena_alloc(struct arena *arena, size_t size)
{
    void *object = arena->data + arena->used;
    arena->used += (size + 15) & ~(size_t)15;
    POOL_ALLOC(arena, object, size);
    return object;
}

static void arena_reset(struct arena *arena)
{
    arena->used = 0;
    POOL_RESET(arena);
}

static void *make_node(struct arena *arena)
{
    return memset(arena_alloc(arena, 48), 0, 48);
}

static void *make_edge(struct arena *arena)
{
    return memset(arena_alloc(arena, 24), 0, 24);
}

static void round_of(struct arena *arena, unsigned objects)
{
    for (unsigned i = 0; i < objects; i++) {
        if (i % 2 == 0)
            make_node(arena);
        else
            make_edge(arena);
    }
}

static void *forgotten;

int main(void)
{
    struct arena *arena = arena_create();
    round_of(arena, 100000);
    arena_reset(arena);
    round_of(arena, 100000);
    arena_reset(arena);
    round_of(arena, 1001);
    arena = NULL;
    forgotten = malloc(1000);
    forgotten = NULL;
    return 0;
}
