/* The shared library of leaky_ci.c: a cache it never frees. */
#include <stdlib.h>

__attribute__((noinline)) void lib_cache(int count)
{
    for (int i = 0; i < count; i++) {
        volatile void *cached = malloc(32);
        (void)cached;
    }
}
