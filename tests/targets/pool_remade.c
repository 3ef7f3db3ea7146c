/* A pool made again at the anchor of one destroyed: "first" at arena gets
 * an object of 16 bytes and is destroyed (the object with it); "other" is
 * made at its own anchor, then "second" at arena again, which gets 2
 * objects of 32 bytes, kept; "other" gets one of 8, kept. */
#include "mprof.h"

static char arena[256], elsewhere[64];

int main(void)
{
    MPROF_POOL_CREATE(arena, "first");
    MPROF_POOL_ALLOC(arena, arena, 16);
    MPROF_POOL_DESTROY(arena);
    MPROF_POOL_CREATE(elsewhere, "other");
    MPROF_POOL_CREATE(arena, "second");
    MPROF_POOL_ALLOC(arena, arena, 32);
    MPROF_POOL_ALLOC(arena, arena + 32, 32);
    MPROF_POOL_ALLOC(elsewhere, elsewhere, 8);
    return 0;
}
