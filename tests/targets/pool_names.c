/* A pool whose name is full of what a page or a terminal must not take as
 * its own: markup, an ampersand, quotes and a newline. */
#include "mprof.h"

static char pool[256];

int main(void)
{
    MPROF_POOL_CREATE(pool, "<b>a&b</b>\"x\"\n");
    MPROF_POOL_ALLOC(pool, pool, 16);
    return 0;
}
