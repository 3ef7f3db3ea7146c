/* Finding dlopen, the signal return trampoline and libraries in the
 * process (see target.h). */
#include "target.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The start of the mapping at file offset 0 of (device, inode), or, when
 * path is given, of the file the map names so; 0 when there is none. */
static uint64_t mapped_at(pid_t pid, dev_t device, ino_t inode, const char *path)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/%d/maps", (int)pid);
    FILE *maps = fopen(name, "re");
    if (!maps)
        return 0;
    char line[4096 + 128];
    uint64_t found = 0;
    while (!found && fgets(line, sizeof line, maps)) {
        uint64_t start, offset;
        unsigned major_number, minor_number;
        unsigned long long file;
        int consumed = 0;
        if (sscanf(line, "%" SCNx64 "-%*x %*s %" SCNx64 " %x:%x %llu %n", &start, &offset, &major_number,
                   &minor_number, &file, &consumed) < 5 || offset != 0)
            continue;
        if (path) {
            char *mapped = line + consumed;
            mapped[strcspn(mapped, "\n")] = '\0';
            size_t length = strlen(path);
            if (!strncmp(mapped, path, length) && (!mapped[length] || !strcmp(mapped + length, " (deleted)")))
                found = start;
        } else if (file == (unsigned long long)inode && makedev(major_number, minor_number) == device) {
            found = start;
        }
    }
    fclose(maps);
    return found;
}

uint64_t library_mapped_at(pid_t pid, const char *path)
{
    struct stat file;
    if (stat(path, &file) == 0)
        return mapped_at(pid, file.st_dev, file.st_ino, NULL);
    return mapped_at(pid, 0, 0, path);
}

/* The kernel's struct sigaction, which says the restorer glibc gave it. */
struct kernel_sigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    uint64_t mask;
};

/* glibc hands the kernel its own restorer with every sigaction: setting
 * SIGURG's action again as it is makes it do so, and the kernel says
 * which it was. */
static void *own_restorer(void)
{
    struct sigaction action;
    struct kernel_sigaction kernel;
    if (sigaction(SIGURG, NULL, &action) != 0 || sigaction(SIGURG, &action, NULL) != 0 ||
        syscall(SYS_rt_sigaction, SIGURG, NULL, &kernel, sizeof kernel.mask) != 0 ||
        !(kernel.flags & 0x04000000) /* SA_RESTORER */)
        return NULL;
    return kernel.restorer;
}

bool find_loader(pid_t pid, struct loader *loader, char *why, size_t why_size)
{
    void *opener = dlsym(RTLD_DEFAULT, "dlopen"), *restorer = own_restorer();
    Dl_info library, restorer_library;
    struct stat file;
    if (!opener || !dladdr(opener, &library) || stat(library.dli_fname, &file) != 0) {
        snprintf(why, why_size, "this program cannot find its own dlopen");
        return false;
    }
    if (!restorer || !dladdr(restorer, &restorer_library) || restorer_library.dli_fbase != library.dli_fbase) {
        snprintf(why, why_size, "this program cannot find its C library's signal return trampoline");
        return false;
    }
    uint64_t base = mapped_at(pid, file.st_dev, file.st_ino, NULL);
    if (!base) {
        snprintf(why, why_size,
                 "it does not use %s (a static program, or one in a container with a C library of its "
                 "own): the monitor cannot be loaded into it; start it under mprof run",
                 library.dli_fname);
        return false;
    }
    uint64_t own_base = (uint64_t)(uintptr_t)library.dli_fbase;
    loader->dlopen = base + ((uint64_t)(uintptr_t)opener - own_base);
    loader->restorer = base + ((uint64_t)(uintptr_t)restorer - own_base);
    memcpy(loader->restorer_code, restorer, sizeof loader->restorer_code);
    return true;
}

int memory_map_error(pid_t pid)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/%d/maps", (int)pid);
    FILE *maps = fopen(name, "re");
    if (!maps)
        return errno;
    fclose(maps);
    return 0;
}
