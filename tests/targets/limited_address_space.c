/* A program that limits its own address space (as ulimit -v does in a
 * shell), then takes 100 MiB with malloc and maps 100 MiB itself; prints
 * "ok" when both succeed.  Without an argument it sets a limit of 2 GiB
 * with setrlimit, and checks with getrlimit that the limit is its own.
 * With "prlimit" it sets, with prlimit of pid 0, a limit only 180 MiB above
 * the address space it has (VmSize, which counts what the monitor
 * reserved): the 200 MiB fit only once the monitor gave back what of its
 * reservation it does not use (run alone, it fails). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

/* The address space in use, in bytes; 0 when /proc cannot say.  Read
 * without stdio, which would allocate. */
static size_t address_space(void)
{
    static char status[8192];
    int fd = open("/proc/self/status", O_RDONLY);
    ssize_t length = fd < 0 ? -1 : read(fd, status, sizeof status - 1);
    if (fd >= 0)
        close(fd);
    if (length <= 0)
        return 0;
    status[length] = '\0';
    const char *line = strstr(status, "\nVmSize:");
    size_t kib = 0;
    return line && sscanf(line, "\nVmSize: %zu kB", &kib) == 1 ? kib * 1024 : 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "prlimit")) {
        size_t in_use = address_space();
        struct rlimit limit;
        if (!in_use || getrlimit(RLIMIT_AS, &limit))
            return 1;
        limit.rlim_cur = in_use + 180 * MIB;
        if (prlimit(0, RLIMIT_AS, &limit, NULL) != 0)
            return 1;
    } else {
        struct rlimit limit = {2048 * MIB, 2048 * MIB}, set;
        if (setrlimit(RLIMIT_AS, &limit) != 0 || getrlimit(RLIMIT_AS, &set) != 0 ||
            set.rlim_cur != limit.rlim_cur || set.rlim_max != limit.rlim_max)
            return 1;
    }
    char *block = malloc(100 * MIB);
    char *region = mmap(NULL, 100 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!block || region == MAP_FAILED)
        return 2;
    memset(block, 1, MIB);
    region[0] = 1;
    return write(1, "ok\n", 3) == 3 ? 0 : 3;
}
