/* A library for the tests of mprof-inject to call into a process:
 * probe_twice(N) answers 2N+1; probe_wait(DIR) creates DIR/inside, then
 * waits until DIR/release exists and answers 7, so that a test can act
 * while a thread of the process runs the call.  probe_wait first fills
 * every vector register, ymm0 to ymm15 (xmm0 to xmm15 without AVX), with a
 * pattern, as code using AVX's memcpy may leave them (the ABI keeps none
 * across a call): what the thread held there comes back only if
 * mprof-inject puts it back.  probe_fault(SIGNAL), SIGNAL one of SEGV, BUS,
 * ILL, FPE and TRAP, installs a handler of that signal (which would end the
 * process with status 86) and faults so as to raise it: mprof-inject must
 * stop the thread at the fault with the signal unblocked, as the kernel
 * resets the handler of a fault it finds blocked, and never let the
 * handler run.  probe_write(TEXT) writes TEXT to no file (descriptor -1)
 * and answers what write returned: -1 where it goes to the kernel, its
 * length where a seccomp filter's handler answers it (trapped_writes.c).
 * probe_exec(PROGRAM) has a thread of its own execute PROGRAM once the
 * calling thread waits for it to end (in a futex, pthread_join's): the
 * calling thread, the one mprof-inject stopped, ends with the rest of the
 * old program, and the process goes on as PROGRAM. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int probe_twice(const char *argument)
{
    return 2 * atoi(argument) + 1;
}

int probe_write(const char *argument)
{
    return (int)write(-1, argument, strlen(argument));
}

static pid_t exec_caller;

/* Reads /proc/self/task/TID/FILE whole, NUL-terminated; false when it cannot. */
static int read_task_file(pid_t tid, const char *file, char *text, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, file);
    int descriptor = open(path, O_RDONLY);
    if (descriptor < 0)
        return 0;
    ssize_t got = read(descriptor, text, size - 1);
    close(descriptor);
    text[got > 0 ? got : 0] = '\0';
    return got > 0;
}

static void *execute(void *program)
{
    /* Once the caller sleeps in its futex (state S, system call 202). */
    struct timespec pause = {0, 1000000};
    for (;;) {
        char stat[512], syscall_line[256];
        const char *state = read_task_file(exec_caller, "stat", stat, sizeof stat) ? strrchr(stat, ')') : NULL;
        if (state && state[1] == ' ' && state[2] == 'S' &&
            read_task_file(exec_caller, "syscall", syscall_line, sizeof syscall_line) &&
            atoi(syscall_line) == SYS_futex)
            break;
        nanosleep(&pause, NULL);
    }
    execl(program, program, (char *)NULL);
    return NULL;
}

int probe_exec(const char *program)
{
    exec_caller = (pid_t)syscall(SYS_gettid);
    pthread_t thread;
    if (pthread_create(&thread, NULL, execute, (void *)program) != 0)
        return -1;
    pthread_join(thread, NULL);
    return -1;
}

#define FILL(n) "vmovupd (%0), %%ymm" #n "\n\t"
#define FILL_SSE(n) "movupd (%0), %%xmm" #n "\n\t"

static void fill_vector_registers(void)
{
    static const double pattern[4] = {-123.25, 8e100, -0.5, 1e-300};
    if (__builtin_cpu_supports("avx"))
        __asm__ volatile(FILL(0) FILL(1) FILL(2) FILL(3) FILL(4) FILL(5) FILL(6) FILL(7) FILL(8) FILL(9) FILL(10)
                             FILL(11) FILL(12) FILL(13) FILL(14) FILL(15)
                         :
                         : "r"(pattern)
                         : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                           "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    else
        __asm__ volatile(FILL_SSE(0) FILL_SSE(1) FILL_SSE(2) FILL_SSE(3) FILL_SSE(4) FILL_SSE(5) FILL_SSE(6)
                             FILL_SSE(7) FILL_SSE(8) FILL_SSE(9) FILL_SSE(10) FILL_SSE(11) FILL_SSE(12)
                                 FILL_SSE(13) FILL_SSE(14) FILL_SSE(15)
                         :
                         : "r"(pattern)
                         : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                           "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

int probe_wait(const char *directory)
{
    fill_vector_registers();
    char path[4096];
    snprintf(path, sizeof path, "%s/inside", directory);
    int created = open(path, O_CREAT | O_WRONLY, 0600);
    if (created < 0)
        return -1;
    close(created);
    snprintf(path, sizeof path, "%s/release", directory);
    struct timespec pause = {0, 1000000};
    while (access(path, F_OK) != 0)
        nanosleep(&pause, NULL);
    return 7;
}

static void on_fault(int number)
{
    (void)number;
    _exit(86);
}

int probe_fault(const char *argument)
{
    static const struct {
        const char *name;
        int number;
    } faults[] = {{"SEGV", SIGSEGV}, {"BUS", SIGBUS}, {"ILL", SIGILL}, {"FPE", SIGFPE}, {"TRAP", SIGTRAP}};
    int number = 0;
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
        if (!strcmp(argument, faults[i].name))
            number = faults[i].number;
    struct sigaction action = {.sa_handler = on_fault};
    sigemptyset(&action.sa_mask);
    if (!number || sigaction(number, &action, NULL) != 0)
        return -1;
    if (number == SIGSEGV) {
        int *volatile nowhere = NULL;
        return *nowhere;
    }
    if (number == SIGBUS) { /* a page past the end of the file it maps */
        int empty = memfd_create("probe_fault", 0);
        volatile int *past = mmap(NULL, 4096, PROT_READ, MAP_SHARED, empty, 0);
        return past == MAP_FAILED ? -1 : *past;
    }
    if (number == SIGFPE) {
        volatile int seven = 7, zero = 0;
        return seven / zero;
    }
    if (number == SIGTRAP)
        __asm__ volatile("int3");
    else
        __builtin_trap(); /* ud2: SIGILL */
    return -1;
}
