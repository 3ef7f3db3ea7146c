/* Stops the other threads from a tracer task: a clone of the process that
 * shares its memory but is no thread of it (no CLONE_THREAD), so that it
 * may ptrace them, and that no exit signal tells the program of it; the
 * program's waitpid never sees it (only __WALL or __WCLONE would).  The
 * tracer seizes and interrupts each thread, which stops it where it is
 * without a signal the program could see, reads its registers, tells the
 * scanning thread, and detaches them all when told to: the threads go on
 * as if nothing happened (an interrupted system call restarts). */
#include "world.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"

_Static_assert(sizeof(struct user_regs_struct) == WORLD_REGISTERS * sizeof(uint64_t),
               "every general register is scanned");

/* The tracer's stack, with its job (and its list of refused threads) at
 * the bottom. */
#define TRACER_STACK_SIZE (128 * 1024)

enum phase {
    PHASE_STARTING,
    PHASE_STOPPED,  /* the tracer stopped what it could: scan */
    PHASE_RESUMING, /* the scan is done: let them go */
    PHASE_DONE,
};

/* What the tracer is given: the world to fill, and who to leave alone;
 * and the threads it could not stop, not to count them twice. */
struct tracer_job {
    struct world *world;
    pid_t pid, scanner;
    size_t refused_count;
    pid_t refused[WORLD_THREADS_MAX];
};
_Static_assert(sizeof(struct tracer_job) < TRACER_STACK_SIZE / 2, "the job leaves the tracer room for its stack");

static long futex(_Atomic int *word, int operation, int value, const struct timespec *timeout)
{
    return syscall(SYS_futex, word, operation, value, timeout, NULL, 0);
}

static void set_phase(struct world *world, enum phase phase)
{
    atomic_store(&world->phase, phase);
    futex(&world->phase, FUTEX_WAKE, 1, NULL);
}

struct linux_dirent64 {
    uint64_t inode;
    int64_t offset;
    unsigned short length;
    unsigned char type;
    char name[];
};

static bool handled(const struct tracer_job *job, pid_t tid)
{
    for (size_t i = 0; i < job->world->count; i++)
        if (job->world->threads[i].tid == tid)
            return true;
    for (size_t i = 0; i < job->refused_count; i++)
        if (job->refused[i] == tid)
            return true;
    return false;
}

/* Stops tid and reads its registers into the next slot; false when it
 * cannot be (traced already, or gone). */
static bool stop_thread(struct world *world, pid_t tid)
{
    if (syscall(SYS_ptrace, PTRACE_SEIZE, tid, 0, 0) != 0)
        return false;
    int status;
    if (syscall(SYS_ptrace, PTRACE_INTERRUPT, tid, 0, 0) != 0 ||
        syscall(SYS_wait4, tid, &status, __WALL, NULL) != tid || !WIFSTOPPED(status)) {
        syscall(SYS_ptrace, PTRACE_DETACH, tid, 0, 0);
        return false;
    }
    struct user_regs_struct registers;
    if (syscall(SYS_ptrace, PTRACE_GETREGS, tid, 0, &registers) != 0) {
        syscall(SYS_ptrace, PTRACE_DETACH, tid, 0, 0);
        return false;
    }
    struct stopped_thread *thread = &world->threads[world->count++];
    thread->tid = tid;
    thread->stack_pointer = registers.rsp;
    thread->thread_pointer = registers.fs_base;
    memcpy(thread->registers, &registers, sizeof registers);
    return true;
}

/* One pass over the process's threads: true when it found one not seen
 * before. */
static bool stop_pass(struct tracer_job *job)
{
    char path[40] = "/proc/";
    char digits[12];
    int length = 0;
    for (unsigned value = (unsigned)job->pid; value; value /= 10)
        digits[length++] = (char)('0' + value % 10);
    size_t at = 6;
    while (length)
        path[at++] = digits[--length];
    memcpy(path + at, "/task", 6);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool found = false;
    char buffer[4096] __attribute__((aligned(8)));
    for (long got; (got = syscall(SYS_getdents64, fd, buffer, sizeof buffer)) > 0;) {
        for (long offset = 0; offset < got;) {
            struct linux_dirent64 *entry = (struct linux_dirent64 *)(buffer + offset);
            offset += entry->length;
            pid_t tid = 0;
            for (const char *c = entry->name; *c >= '0' && *c <= '9'; c++)
                tid = tid * 10 + (*c - '0');
            if (tid <= 0 || tid == job->scanner || handled(job, tid))
                continue;
            found = true;
            if (job->world->count < WORLD_THREADS_MAX && stop_thread(job->world, tid))
                continue;
            if (job->refused_count < WORLD_THREADS_MAX)
                job->refused[job->refused_count++] = tid;
            job->world->unstopped++;
        }
    }
    syscall(SYS_close, fd);
    return found;
}

static int tracer(void *argument)
{
    struct tracer_job *job = argument;
    struct world *world = job->world;
    /* Should the scanning thread die (a fault in the scan), the tracer dies
     * with it, and its end lets the stopped threads go: left waiting, it
     * would keep the process from ever ending. */
    syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (syscall(SYS_getppid) != job->pid)
        return 0;
    /* A thread not stopped yet may start another: list them until a pass
     * finds none new. */
    for (unsigned pass = 0; pass < 64 && stop_pass(job); pass++)
        ;
    set_phase(world, PHASE_STOPPED);
    while (atomic_load(&world->phase) != PHASE_RESUMING)
        futex(&world->phase, FUTEX_WAIT, PHASE_STOPPED, NULL);
    for (size_t i = 0; i < world->count; i++)
        syscall(SYS_ptrace, PTRACE_DETACH, world->threads[i].tid, 0, 0);
    set_phase(world, PHASE_DONE);
    return 0;
}

/* Whether the tracer has ended (or was never there): reaped if so. */
static bool tracer_gone(struct world *world)
{
    int status;
    long reaped = syscall(SYS_wait4, world->tracer, &status, __WALL | WNOHANG, NULL);
    return reaped == world->tracer || (reaped < 0 && errno != EINTR);
}

/* Waits until the tracer reaches phase or ends; false when it ended first. */
static bool wait_phase(struct world *world, enum phase phase)
{
    const struct timespec tick = {0, 20 * 1000 * 1000};
    while (atomic_load(&world->phase) < (int)phase) {
        futex(&world->phase, FUTEX_WAIT, atomic_load(&world->phase), &tick);
        if (atomic_load(&world->phase) < (int)phase && tracer_gone(world)) {
            world->tracer = 0;
            return false;
        }
    }
    return true;
}

/* How many threads the process has, from /proc/self/stat. */
static unsigned thread_count(void)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 2;
    char text[1024];
    long got = syscall(SYS_read, fd, text, sizeof text - 1);
    syscall(SYS_close, fd);
    if (got <= 0)
        return 2;
    text[got] = 0;
    /* Field 20, num_threads, counted after the command's closing parenthesis
     * (the command may hold spaces and parentheses of its own). */
    char *c = strrchr(text, ')');
    if (!c)
        return 2;
    for (unsigned field = 2; field < 20 && *c; c++)
        field += *c == ' ';
    unsigned count = 0;
    for (; *c >= '0' && *c <= '9'; c++)
        count = count * 10 + (unsigned)(*c - '0');
    return count ? count : 2;
}

/* Whether a seccomp filter governs the process (/proc/self/status's
 * Seccomp: 2): the filter may answer clone or ptrace with a signal the
 * program would see, or with its end. */
static bool filtered(void)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true;
    char text[4096];
    long got = syscall(SYS_read, fd, text, sizeof text - 1);
    syscall(SYS_close, fd);
    if (got <= 0)
        return true;
    text[got] = 0;
    const char *line = strstr(text, "\nSeccomp:\t");
    return !line || line[10] != '0';
}

bool world_stop(struct world *world)
{
    memset(world, 0, sizeof *world);
    unsigned threads = thread_count();
    if (threads <= 1)
        return true;
    if (filtered()) {
        world->unstopped = threads - 1;
        return false;
    }
    world->threads = region_map(WORLD_THREADS_MAX * sizeof(struct stopped_thread));
    world->tracer_stack = region_map(TRACER_STACK_SIZE);
    struct tracer_job *job = world->tracer_stack;
    if (!world->threads || !job) {
        world->unstopped = thread_count() - 1;
        world_resume(world);
        return false;
    }
    *job = (struct tracer_job){.world = world, .pid = getpid(), .scanner = (pid_t)syscall(SYS_gettid)};
    int saved_errno = errno;
    /* The tracer starts with every signal blocked: it has a copy of the
     * program's handlers, and the SIGCHLD of each thread it stops would run
     * the program's own on its stack, in the program's memory. */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    world->tracer = clone(tracer, (char *)world->tracer_stack + TRACER_STACK_SIZE,
                          CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED, job);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    errno = saved_errno;
    if (world->tracer <= 0 || !wait_phase(world, PHASE_STOPPED)) {
        world->tracer = 0;
        world->count = 0;
        world->unstopped = thread_count() - 1;
        world_resume(world);
        return false;
    }
    return true;
}

void world_resume(struct world *world)
{
    if (world->tracer) {
        set_phase(world, PHASE_RESUMING);
        wait_phase(world, PHASE_DONE);
        while (world->tracer && !tracer_gone(world))
            sched_yield();
    }
    world->tracer = 0;
    if (world->threads)
        region_unmap(world->threads, WORLD_THREADS_MAX * sizeof(struct stopped_thread));
    if (world->tracer_stack)
        region_unmap(world->tracer_stack, TRACER_STACK_SIZE);
    world->threads = NULL;
    world->tracer_stack = NULL;
}
