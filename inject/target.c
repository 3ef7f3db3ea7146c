/* Finding dlopen, dlsym and dlerror in the process (see target.h). */
#include "target.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* The start of the mapping of (device, inode) at file offset 0 in pid's
 * memory map; 0 when there is none. */
static uint64_t mapped_at(pid_t pid, dev_t device, ino_t inode)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *maps = fopen(path, "re");
    if (!maps)
        return 0;
    char line[4096];
    uint64_t found = 0;
    while (!found && fgets(line, sizeof line, maps)) {
        uint64_t start, offset;
        unsigned major_number, minor_number;
        unsigned long long file;
        if (sscanf(line, "%" SCNx64 "-%*x %*s %" SCNx64 " %x:%x %llu", &start, &offset, &major_number,
                   &minor_number, &file) == 5 &&
            offset == 0 && file == (unsigned long long)inode && makedev(major_number, minor_number) == device)
            found = start;
    }
    fclose(maps);
    return found;
}

bool find_loader(pid_t pid, struct loader *loader, char *why, size_t why_size)
{
    void *functions[] = {dlsym(RTLD_DEFAULT, "dlopen"), dlsym(RTLD_DEFAULT, "dlsym"),
                         dlsym(RTLD_DEFAULT, "dlerror")};
    Dl_info library;
    struct stat file;
    if (!functions[0] || !functions[1] || !functions[2] || !dladdr(functions[0], &library) ||
        stat(library.dli_fname, &file) != 0) {
        snprintf(why, why_size, "this program cannot find its own dlopen");
        return false;
    }
    uint64_t base = mapped_at(pid, file.st_dev, file.st_ino);
    if (!base) {
        snprintf(why, why_size,
                 "it does not use %s (a static program, or one in a container with a C library of its "
                 "own): the monitor cannot be loaded into it; start it under mprof run",
                 library.dli_fname);
        return false;
    }
    uint64_t own_base = (uint64_t)(uintptr_t)library.dli_fbase;
    loader->dlopen = base + ((uint64_t)(uintptr_t)functions[0] - own_base);
    loader->dlsym = base + ((uint64_t)(uintptr_t)functions[1] - own_base);
    loader->dlerror = base + ((uint64_t)(uintptr_t)functions[2] - own_base);
    return true;
}
