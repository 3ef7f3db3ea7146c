/* A library with a pool of its own, annotated with mprof.h: each
 * library_object is carved from a static buffer. */
#include <stddef.h>

#include "mprof.h"

static struct {
    char bytes[4096];
    size_t used;
} buffer;

void library_start(void)
{
    MPROF_POOL_CREATE(&buffer, "library pool");
}

void *library_object(size_t size)
{
    void *object = buffer.bytes + buffer.used;
    buffer.used += (size + 15) & ~(size_t)15;
    MPROF_POOL_ALLOC(&buffer, object, size);
    return object;
}
