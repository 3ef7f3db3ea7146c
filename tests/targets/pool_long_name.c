/* A pool whose name is 60 bytes: 54 "a", then "b", then "ccccc"; the
 * monitor keeps its first 55 bytes (libmprof(3)), up to the "b". */
#include "mprof.h"

static char arena[64];

int main(void)
{
    MPROF_POOL_CREATE(arena, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabccccc");
    MPROF_POOL_ALLOC(arena, arena, 16);
    return 0;
}
