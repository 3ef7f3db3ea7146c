/* Loaded and unloaded by dlclose_main: its blocks outlive it. */
#include <stdlib.h>

void *plugin_allocate(size_t size)
{
    return malloc(size);
}
