/* A program that limits its own address space (as ulimit -v does in a
 * shell), then takes 100 MiB with malloc and maps 100 MiB itself; prints
 * "ok" when both succeed.  Without an argument it lowers its own limit
 * below the one process 1 has, with the system call itself, then sets it
 * to process 1's (soft and hard) with setrlimit, and checks with getrlimit
 * that the limit set is its own (a setrlimit that set process 1's instead
 * would leave process 1's as it was).  With "prlimit", or where its hard
 * limit is not process 1's, it sets, with prlimit of pid 0 (or of its own
 * pid, with "prlimit-pid"), a limit only 180 MiB above the address space
 * it has (VmSize, which counts what the monitor reserved): the 200 MiB fit
 * only once the monitor gave back what of its reservation it does not use
 * (run alone, it fails). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

/* The text of a file of /proc, read without stdio (which would allocate)
 * into a buffer of 8 KiB; NULL when it cannot be read. */
static const char *proc_text(const char *path)
{
    static char text[8192];
    int fd = open(path, O_RDONLY);
    ssize_t length = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
    if (fd >= 0)
        close(fd);
    if (length <= 0)
        return NULL;
    text[length] = '\0';
    return text;
}

/* The address space in use, in bytes; 0 when /proc cannot say. */
static size_t address_space(void)
{
    const char *status = proc_text("/proc/self/status");
    if (!status)
        return 0;
    const char *line = strstr(status, "\nVmSize:");
    size_t kib = 0;
    return line && sscanf(line, "\nVmSize: %zu kB", &kib) == 1 ? kib * 1024 : 0;
}

/* Process 1's limits of its address space, from /proc/1/limits; false
 * when they cannot be read. */
static bool init_limits(rlim_t *soft, rlim_t *hard)
{
    const char *limits = proc_text("/proc/1/limits");
    if (!limits)
        return false;
    const char *line = strstr(limits, "Max address space");
    if (!line)
        return false;
    line += strlen("Max address space");
    rlim_t *values[] = {soft, hard};
    for (int i = 0; i < 2; i++) {
        while (*line == ' ')
            line++;
        *values[i] = strncmp(line, "unlimited", 9) ? strtoull(line, NULL, 10) : RLIM_INFINITY;
        while (*line && *line != ' ')
            line++;
    }
    return true;
}

int main(int argc, char **argv)
{
    struct rlimit own;
    rlim_t init_soft, init_hard;
    if (getrlimit(RLIMIT_AS, &own) || !init_limits(&init_soft, &init_hard) || init_soft < 1024 * MIB)
        return 1;
    /* The setrlimit case sets what process 1 has, soft and hard, so that a
     * setrlimit that set process 1's limits instead (a mistake in the
     * monitor's) would change nothing there; where this process's hard
     * limit is not process 1's, it could, and prlimit is tested instead. */
    bool as_init = own.rlim_max == init_hard;
    if ((argc > 1 && !strncmp(argv[1], "prlimit", 7)) || !as_init) {
        size_t in_use = address_space();
        struct rlimit limit;
        if (!in_use || getrlimit(RLIMIT_AS, &limit))
            return 1;
        limit.rlim_cur = in_use + 180 * MIB;
        if (prlimit(argc > 1 && !strcmp(argv[1], "prlimit-pid") ? getpid() : 0, RLIMIT_AS, &limit, NULL) != 0)
            return 1;
    } else {
        struct rlimit set;
        struct rlimit limit = {init_soft, init_hard};
        struct rlimit lowered = {limit.rlim_cur == RLIM_INFINITY ? 2048 * MIB : limit.rlim_cur - MIB, own.rlim_max};
        if (syscall(SYS_prlimit64, 0, RLIMIT_AS, &lowered, NULL) != 0)
            return 1;
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
