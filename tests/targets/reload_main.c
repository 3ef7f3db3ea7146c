/* dlopens each PLUGIN in turn, keeps a block it allocates (301, 302, ...
 * bytes) and dlcloses it, so the next plugin can be mapped where the last
 * one was: a stack walk must not use what it learnt of the unloaded code.
 * Prints each plugin's load address.
 *
 *     reload_main PLUGIN... */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *volatile sink;

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        void *plugin = dlopen(argv[i], RTLD_NOW);
        if (!plugin) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 1;
        }
        void *(*entry)(size_t) = (void *(*)(size_t))dlsym(plugin, "plugin_entry");
        Dl_info info;
        dladdr((void *)entry, &info);
        printf("%p\n", info.dli_fbase);
        sink = entry(300 + (size_t)i);
        if (dlclose(plugin))
            return 1;
    }
    return 0;
}
