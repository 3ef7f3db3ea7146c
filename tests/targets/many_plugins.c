/* dlopens every library named in LIST (a path a line), then allocates 4242
 * bytes through the last one's plugin_allocate and keeps them: the
 * allocation's frames are in the last module loaded.
 *
 *     many_plugins LIST */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    FILE *list = fopen(argv[1], "r");
    if (!list)
        return 3;
    static char path[8192];
    void *last = NULL;
    int loaded = 0;
    while (fgets(path, sizeof path, list)) {
        path[strcspn(path, "\n")] = '\0';
        if (!(last = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 4;
        }
        loaded++;
    }
    fclose(list);
    void *(*allocate)(size_t) = (void *(*)(size_t))dlsym(last, "plugin_allocate");
    printf("%d loaded, kept %p\n", loaded, allocate(4242));
    return 0;
}
