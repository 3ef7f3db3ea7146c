/* An allocator of the program's own, preloaded after the monitor: it hands
 * every call to glibc under glibc's internal names, so the blocks are
 * glibc's, but the functions the monitor finds next are not libc's, and
 * nothing tells it their blocks have glibc's layout.  The monitor must then
 * keep the blocks in its map and leave their neighbouring bytes alone.
 * Built with -DONLY_MALLOC it replaces malloc alone, as some do. */
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

__attribute__((visibility("default"))) void *malloc(size_t size)
{
    return __libc_malloc(size);
}

#ifndef ONLY_MALLOC
__attribute__((visibility("default"))) void free(void *block)
{
    __libc_free(block);
}

__attribute__((visibility("default"))) void *calloc(size_t count, size_t size)
{
    return __libc_calloc(count, size);
}

__attribute__((visibility("default"))) void *realloc(void *block, size_t size)
{
    return __libc_realloc(block, size);
}
#endif
