/* Ends in the way its argument names, after known work: keep() allocates
 * 100 blocks of 64 bytes and frees 40 of them, so 60 blocks (3,840 bytes)
 * are live when it ends.
 *
 *     endings segv|abort|_exit|_Exit|quick_exit|exit_group|term|reraise
 *     endings peak MIB     hold() keeps MIB blocks of 1 MiB, then churn()
 *                          allocates and frees until killed
 *     endings burst N SIZE burst() keeps N blocks of SIZE bytes, as fast as
 *                          it can, then the program sleeps until killed
 *     endings forks N FILE N times: grows by a third in blocks of 1 MiB
 *                          (a new high for a checkpoint), then forks a
 *                          child that keeps one block of 1 MiB, waits up to
 *                          30 s for FILE.PID, its checkpoint, and ends with
 *                          exit_group (no final file): status 0 when it
 *                          came; exits 1 after the first child that failed
 *
 * reraise: a crash reporter's handler that prints, restores the default
 * action and raises again.  peak prints "peak" once it holds its peak and
 * has churned for half a second, burst prints "held" once it holds its
 * blocks. */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void *blocks[100];

__attribute__((noinline)) static void keep(void)
{
    for (int i = 0; i < 100; i++)
        blocks[i] = malloc(64);
    for (int i = 0; i < 40; i++)
        free(blocks[i]);
}

__attribute__((noinline)) static void hold(int mebibytes)
{
    for (int i = 0; i < mebibytes; i++)
        memset(malloc(1 << 20), 1, 4096);
}

/* What the OOM killer ends: memory that grows faster than any checkpoint
 * could be written, and then nothing more (no allocation to notice it). */
__attribute__((noinline)) static void burst(long count, size_t size)
{
    for (long i = 0; i < count; i++)
        *(volatile char *)malloc(size) = 1;
}

static double seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* A child forked while the parent's checkpoints are being written: its
 * own first checkpoint must still come. */
__attribute__((noinline)) static int forks(int count, const char *file)
{
    long held = 0;
    for (int i = 0; i < count; i++) {
        long more = held / 3 > 0 ? held / 3 : 1;
        burst(more, 1 << 20);
        held += more;
        pid_t child = fork();
        if (child < 0)
            return 2;
        if (child == 0) {
            char name[4096];
            snprintf(name, sizeof name, "%s.%d", file, (int)getpid());
            burst(1, 1 << 20);
            struct stat written;
            int status = 1;
            for (double until = seconds() + 30; seconds() < until; usleep(1000))
                if (stat(name, &written) == 0) {
                    status = 0;
                    break;
                }
            syscall(SYS_exit_group, status);
        }
        int status;
        if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 1;
    }
    return 0;
}

__attribute__((noinline)) static void churn(double until)
{
    while (seconds() < until)
        for (int i = 0; i < 1000; i++)
            free(malloc(32));
}

static void report_and_reraise(int signal_number)
{
    static const char line[] = "reporter saw the crash\n";
    if (write(STDOUT_FILENO, line, sizeof line - 1) < 0)
        _exit(99);
    signal(signal_number, SIG_DFL);
    raise(signal_number);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *how = argv[1];
    if (!strcmp(how, "peak")) {
        hold(argc > 2 ? atoi(argv[2]) : 64);
        churn(seconds() + 0.5);
        puts("peak");
        fflush(stdout);
        for (;;)
            churn(seconds() + 3600);
    }
    if (!strcmp(how, "burst") && argc == 4) {
        burst(atol(argv[2]), (size_t)atol(argv[3]));
        if (write(STDOUT_FILENO, "held\n", 5) != 5) /* no stdio buffer: not one allocation more */
            return 99;
        for (;;)
            pause();
    }
    if (!strcmp(how, "forks") && argc == 4)
        return forks(atoi(argv[2]), argv[3]);
    keep();
    if (!strcmp(how, "segv"))
        *(volatile int *)(uintptr_t)argc = 0; /* address 2: a fault, not a kill */
    else if (!strcmp(how, "abort"))
        abort();
    else if (!strcmp(how, "_exit"))
        _exit(3);
    else if (!strcmp(how, "_Exit"))
        _Exit(4);
    else if (!strcmp(how, "quick_exit"))
        quick_exit(5);
    else if (!strcmp(how, "exit_group"))
        syscall(SYS_exit_group, 6);
    else if (!strcmp(how, "term"))
        kill(getpid(), SIGTERM);
    else if (!strcmp(how, "reraise")) {
        signal(SIGSEGV, report_and_reraise);
        *(volatile int *)(uintptr_t)argc = 0;
    }
    return 1;
}
