/* Test target for the leak kinds (issue 49): objects of the program's own pool, announced through
 * mprof_valgrind.h so that memcheck (its mempool requests) and mprof (mprof.h's pool API) both see them.
 *
 * Expected, as memcheck says (tests/e2e/test_leak_kinds.py checks it), by the function announcing each object:
 *   still reachable  keep_objects 5 x 64 (a global array points at them),
 *                    side_block 1 x 100 (malloc'ed, pointed to only from a kept pool object)
 *   definitely lost  lose_chain 1 x 64, drop_object 1 x 32
 *   indirectly lost  lose_chain 3 x 64 (the chain behind the lost one), lost_side_block 1 x 200 (malloc'ed,
 *                    pointed to only from drop_object's object)
 * The arena, malloc'ed and holding the objects, is in neither tool's figures: memcheck leaves a malloc'ed block
 * out of its leak check while pool objects lie in it, mprof keeps it as the pool's backing (libmprof(3)); neither
 * scans it whole, or every object in it would be reachable. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mprof_valgrind.h"
#include "scrub.h"

struct object {
    struct object *next;
    void *side;
    char body[48];
};

struct arena {
    size_t used;
    size_t pad; /* the objects start 16-aligned */
    char data[];
};

static struct arena *arena;
struct object *kept_objects[5];

/* A macro, not a function: the function that announces an object is its allocating function in both tools. */
#define POOL_NEW(object, size)                                     \
    do {                                                           \
        (object) = (void *)(arena->data + arena->used);            \
        arena->used += ((size) + 15) & ~(size_t)15;                \
        memset((void *)(object), 0, (size));                       \
        VALGRIND_MEMPOOL_ALLOC(arena, (object), (size));           \
    } while (0)

static void *side_block(void) { return malloc(100); }
static void *lost_side_block(void) { return malloc(200); }

static void keep_objects(void) {
    for (int i = 0; i < 5; i++)
        POOL_NEW(kept_objects[i], sizeof(struct object));
    kept_objects[2]->side = side_block();
}

static void lose_chain(void) {
    struct object *head = NULL, *o;
    for (int i = 0; i < 4; i++) {
        POOL_NEW(o, sizeof(struct object));
        o->next = head;
        head = o;
    }
}

static void drop_object(void) {
    struct object *o;
    POOL_NEW(o, 32);
    o->side = lost_side_block();
}

int main(void) {
    arena = malloc(sizeof(struct arena) + 4096);
    arena->used = 0;
    VALGRIND_CREATE_MEMPOOL(arena, 0, 0);
    keep_objects();
    lose_chain();
    drop_object();
    scrub();
    return 0;
}
