/* Test target for the leak scan (issue 49): a pool whose objects are cut
 * from a malloc'ed slab that is not declared its backing, the pool's
 * anchor elsewhere.  memcheck leaves such a block, which holds others, out
 * of its leak check; mprof counts it still reachable (the program's own
 * allocator uses it) and classifies the objects in it.
 * Expected: the slab (4,096 bytes) still reachable; of the objects (48
 * bytes each), KEPT reachable from a global array, one definitely lost.
 * With "snapshot": the same in a snapshot, then the pool destroyed and the
 * slab freed, which the final file counts freed: the scan, which leaves
 * the slab out, gave its header back. */
#include <stdlib.h>
#include <string.h>

#include "../../monitor/mprof.h"

#define KEPT 3
#define OBJECT 48

static int anchor;
void *kept[KEPT];
char *volatile slab_of_pool;

__attribute__((noinline)) static void *take(char *slab, int index)
{
    void *object = slab + 64 + index * 64;
    MPROF_POOL_ALLOC(&anchor, object, OBJECT);
    return object;
}

int main(int argc, char **argv)
{
    MPROF_POOL_CREATE(&anchor, "slab");
    char *slab = malloc(4096);
    slab_of_pool = slab;
    for (int i = 0; i < KEPT; i++)
        kept[i] = take(slab, i);
    void *volatile lost = take(slab, KEPT);
    lost = NULL;
    if (argc > 1 && !strcmp(argv[1], "snapshot")) {
        MPROF_DUMP();
        MPROF_POOL_DESTROY(&anchor);
        free(slab);
    }
    return 0;
}
