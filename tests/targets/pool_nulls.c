/* Pool announcements that name nothing, as code that announces what it
 * did not check makes them: a pool made with a NULL anchor (no pool), then
 * 3 objects of 32 bytes announced with no anchor (malloc-like blocks); in
 * the pool "real", a NULL object of 64 bytes (a failed allocation, as
 * malloc's NULL is) beside 2 objects of 16 bytes, one of them freed. */
#include <stddef.h>

#include "mprof.h"

static char arena[256];

int main(void)
{
    MPROF_POOL_CREATE(NULL, "nothing");
    for (int i = 0; i < 3; i++)
        MPROF_POOL_ALLOC(NULL, arena + 128 + 32 * i, 32);
    MPROF_POOL_CREATE(arena, "real");
    MPROF_POOL_ALLOC(arena, NULL, 64);
    MPROF_POOL_ALLOC(arena, arena, 16);
    MPROF_POOL_ALLOC(arena, arena + 16, 16);
    MPROF_POOL_FREE(arena, arena + 16);
    return 0;
}
