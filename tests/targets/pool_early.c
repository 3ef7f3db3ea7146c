/* A library whose constructor makes its pools before the program starts:
 * a library the program needs is set up before one preloaded, so
 * libmprof's constructor has not run yet, and as nothing here allocates,
 * the first pool's creation is the first call the monitor sees (its fork
 * handlers' registration is not one).
 *
 * Its pool "early pool" gets 3 objects of 24 bytes there; early_object
 * takes more, all carved from a static buffer and kept.  Its pool
 * "scratch" is empty at every fork: the library destroys it as a fork
 * starts and makes it anew in each process after (fork handlers
 * registered before the monitor's, so that they run while the monitor
 * holds its locks for the fork); scratch_objects takes objects of 16
 * bytes from it and gives them back. */
#include <pthread.h>
#include <stddef.h>

#include "mprof.h"

static struct {
    char bytes[4096];
    size_t used;
} buffer;

static char scratch[64];

void *early_object(size_t size)
{
    void *object = buffer.bytes + buffer.used;
    buffer.used += (size + 15) & ~(size_t)15;
    MPROF_POOL_ALLOC(&buffer, object, size);
    return object;
}

void scratch_objects(unsigned count)
{
    for (unsigned i = 0; i < count; i++)
        MPROF_POOL_ALLOC(scratch, scratch + 16 * i, 16);
    for (unsigned i = 0; i < count; i++)
        MPROF_POOL_FREE(scratch, scratch + 16 * i);
}

/* One call makes the scratch pool each time, so that it keeps one frame. */
static void make_scratch(void)
{
    MPROF_POOL_CREATE(scratch, "scratch");
}

static void drop_scratch(void)
{
    MPROF_POOL_DESTROY(scratch);
}

__attribute__((constructor)) static void early_start(void)
{
    /* Before any call of the monitor's, which registers its own handlers
     * as it starts. */
    pthread_atfork(drop_scratch, make_scratch, make_scratch);
    MPROF_POOL_CREATE(&buffer, "early pool");
    for (int i = 0; i < 3; i++)
        early_object(24);
    make_scratch();
}
