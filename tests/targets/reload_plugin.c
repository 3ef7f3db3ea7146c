/* Built twice with different FRAME_BYTES: the same code addresses with
 * different frames, for reload_main to load one after the other.  With
 * PADDING, a function of its own comes first, so every later address means
 * something else than in a build without it. */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

#ifdef PADDING
NOINLINE void *padding(size_t size)
{
    volatile size_t sizes[64];
    for (size_t i = 0; i < 64; i++)
        sizes[i] = size * i;
    return malloc(sizes[63] + sizes[1]);
}
#endif

NOINLINE static void *inner(size_t size)
{
    volatile char pad[FRAME_BYTES];
    pad[0] = 0;
    void *block = malloc(size + (size_t)pad[0]);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    return block;
}

void *plugin_entry(size_t size)
{
    void *block = inner(size);
    __asm__ volatile("" ::: "memory");
    return block;
}
