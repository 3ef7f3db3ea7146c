/* dlopens PLUGIN, allocates 77 bytes through it three times (keeping one),
 * dlcloses it, and exits: the leak's addresses are in an unloaded object.
 *
 *     dlclose_main PLUGIN */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *plugin = dlopen(argv[1], RTLD_NOW);
    if (!plugin) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    void *(*allocate)(size_t) = (void *(*)(size_t))dlsym(plugin, "plugin_allocate");
    void *kept = allocate(77);
    free(allocate(77));
    free(allocate(77));
    (void)kept;
    return dlclose(plugin);
}
