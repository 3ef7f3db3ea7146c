/* Built twice with different FRAME_BYTES: the same code addresses with
 * different frames, for reload_main to load one after the other. */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

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
