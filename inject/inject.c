/* mprof-inject: calls a function of a shared library inside a running
 * process, as mprof attach and detach need: one of the process's threads,
 * stopped with ptrace where it waits in a system call (so that it holds none
 * of the allocator's or the dynamic loader's locks), runs dlopen(LIBRARY),
 * dlsym(FUNCTION) and FUNCTION(ARGUMENT), then goes back to its system call
 * with every register as it was.  The other threads run on meanwhile.
 *
 * Usage: mprof-inject [--loaded] PID LIBRARY FUNCTION [ARGUMENT]
 * --loaded: only a library already loaded (dlopen's RTLD_NOLOAD).
 * Prints FUNCTION's int result and exits 0; or one line on stderr and exits
 * 1 (the process cannot be traced: ptrace refused), 2 (usage), 3 (the
 * library or function is not there), 4 (no thread waited in a system call
 * in time, or the call failed).  x86-64 only, as the monitor. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "safe_point.h"
#include "target.h"

/* The thread's extended (vector) state: AVX-512 and AMX make it 11 KB on
 * this generation of processors; the kernel says how much it used. */
#define XSTATE_ROOM 65536u
/* How long to look for a thread that waits in a system call. */
#define PATIENCE_NS 5000000000ull

enum exit_status { OK = 0, REFUSED = 1, USAGE = 2, MISSING = 3, FAILED = 4 };

struct stopped {
    pid_t pid, tid;
    struct user_regs_struct saved;
    unsigned char *xstate;
    size_t xstate_size;
    /* Signals that came to the thread while it ran the calls, sent again
     * once it is let go. */
    int pending[32];
    unsigned pending_count;
};

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static bool write_memory(pid_t tid, uint64_t address, const void *data, size_t size)
{
    const unsigned char *bytes = data;
    for (size_t done = 0; done < size; done += sizeof(long)) {
        long word = 0;
        size_t chunk = size - done < sizeof(long) ? size - done : sizeof(long);
        if (chunk < sizeof(long)) {
            errno = 0;
            word = ptrace(PTRACE_PEEKDATA, tid, (void *)(address + done), NULL);
            if (errno)
                return false;
        }
        memcpy(&word, bytes + done, chunk);
        if (ptrace(PTRACE_POKEDATA, tid, (void *)(address + done), (void *)word) != 0)
            return false;
    }
    return true;
}

static void read_string(pid_t tid, uint64_t address, char *out, size_t capacity)
{
    size_t used = 0;
    while (used + 1 < capacity) {
        errno = 0;
        long word = ptrace(PTRACE_PEEKDATA, tid, (void *)(address + used), NULL);
        if (errno)
            break;
        for (size_t i = 0; i < sizeof word && used + 1 < capacity; i++) {
            char c = ((const char *)&word)[i];
            if (!c) {
                out[used] = '\0';
                return;
            }
            out[used++] = c;
        }
    }
    out[used] = '\0';
}

/* Runs function(arguments) on the stopped thread and returns its rax; false
 * when the thread did not come back from it (it crashed, or ended). */
static bool call(struct stopped *thread, uint64_t function, const uint64_t *arguments, unsigned count,
                 uint64_t stack, uint64_t *result)
{
    struct user_regs_struct regs = thread->saved;
    uint64_t *argument_registers[] = {(uint64_t *)&regs.rdi, (uint64_t *)&regs.rsi, (uint64_t *)&regs.rdx};
    for (unsigned i = 0; i < count; i++)
        *argument_registers[i] = arguments[i];
    /* Returns to address 0: the fault stops the thread again, and tells. */
    uint64_t return_address = 0;
    regs.rsp = stack - sizeof return_address;
    if (!write_memory(thread->tid, regs.rsp, &return_address, sizeof return_address))
        return false;
    regs.rip = function;
    regs.rax = 0;
    regs.orig_rax = (uint64_t)-1; /* not back into the system call it was in */
    if (ptrace(PTRACE_SETREGS, thread->tid, NULL, &regs) != 0)
        return false;
    int delivered = 0;
    for (;;) {
        if (ptrace(PTRACE_CONT, thread->tid, NULL, (void *)(long)delivered) != 0)
            return false;
        delivered = 0;
        int status;
        if (waitpid(thread->tid, &status, __WALL) != thread->tid || !WIFSTOPPED(status))
            return false;
        int signal_number = WSTOPSIG(status);
        if (signal_number == SIGSEGV) {
            if (ptrace(PTRACE_GETREGS, thread->tid, NULL, &regs) != 0)
                return false;
            if (regs.rip != 0)
                return false; /* the function itself faulted */
            *result = regs.rax;
            return true;
        }
        if (status >> 16) /* a ptrace event (another interrupt): nothing to deliver */
            continue;
        if (thread->pending_count < sizeof thread->pending / sizeof *thread->pending)
            thread->pending[thread->pending_count++] = signal_number;
    }
}

/* Stops the thread with PTRACE_SEIZE and PTRACE_INTERRUPT, and reads its
 * registers: whether it stopped at a safe point is the caller's to judge. */
static enum exit_status stop_thread(struct stopped *thread, char *why, size_t why_size)
{
    if (ptrace(PTRACE_SEIZE, thread->tid, NULL, NULL) != 0) {
        ptrace_refusal(thread->pid, errno, why, why_size);
        return REFUSED;
    }
    int status;
    if (ptrace(PTRACE_INTERRUPT, thread->tid, NULL, NULL) != 0 ||
        waitpid(thread->tid, &status, __WALL) != thread->tid || !WIFSTOPPED(status)) {
        snprintf(why, why_size, "thread %d ended as it was stopped", thread->tid);
        return FAILED;
    }
    /* A signal that was on its way takes the place of the interrupt's stop:
     * it is passed on, and the interrupt's own stop comes next. */
    while (!(status >> 16)) {
        if (ptrace(PTRACE_CONT, thread->tid, NULL, (void *)(long)WSTOPSIG(status)) != 0 ||
            waitpid(thread->tid, &status, __WALL) != thread->tid || !WIFSTOPPED(status)) {
            snprintf(why, why_size, "thread %d ended as it was stopped", thread->tid);
            return FAILED;
        }
    }
    if (ptrace(PTRACE_GETREGS, thread->tid, NULL, &thread->saved) != 0) {
        snprintf(why, why_size, "cannot read the registers of thread %d", thread->tid);
        return FAILED;
    }
    return OK;
}

static void let_go(struct stopped *thread)
{
    ptrace(PTRACE_DETACH, thread->tid, NULL, NULL);
    for (unsigned i = 0; i < thread->pending_count; i++)
        tgkill(thread->pid, thread->tid, thread->pending[i]);
}

static bool save_xstate(struct stopped *thread)
{
    thread->xstate = calloc(1, XSTATE_ROOM);
    struct iovec state = {thread->xstate, XSTATE_ROOM};
    if (!thread->xstate || ptrace(PTRACE_GETREGSET, thread->tid, (void *)NT_X86_XSTATE, &state) != 0)
        return false;
    thread->xstate_size = state.iov_len;
    return true;
}

static void restore(struct stopped *thread)
{
    struct iovec state = {thread->xstate, thread->xstate_size};
    ptrace(PTRACE_SETREGSET, thread->tid, (void *)NT_X86_XSTATE, &state);
    ptrace(PTRACE_SETREGS, thread->tid, NULL, &thread->saved);
}

/* A thread waiting at a safe point, stopped there; FAILED when none was
 * found in time. */
static enum exit_status stop_at_safe_point(struct stopped *thread, char *why, size_t why_size)
{
    uint64_t give_up = now_ns() + PATIENCE_NS;
    do {
        pid_t waiting = thread_at_safe_point(thread->pid);
        if (waiting > 0) {
            thread->tid = waiting;
            enum exit_status stopped = stop_thread(thread, why, why_size);
            if (stopped != OK)
                return stopped;
            if (at_safe_point(&thread->saved))
                return OK;
            ptrace(PTRACE_DETACH, thread->tid, NULL, NULL); /* it moved on: look again */
        } else if (waiting < 0) {
            snprintf(why, why_size, "no such process");
            return REFUSED;
        }
        struct timespec pause = {0, 10000000};
        nanosleep(&pause, NULL);
    } while (now_ns() < give_up);
    snprintf(why, why_size, "none of its threads waited in a system call for 5 s (each was running, or "
                            "in the allocator's); try again when it is less busy");
    return FAILED;
}

int main(int argc, char **argv)
{
    bool loaded = argc > 1 && !strcmp(argv[1], "--loaded");
    int first = loaded ? 2 : 1;
    if (argc - first < 3 || argc - first > 4) {
        fprintf(stderr, "usage: mprof-inject [--loaded] PID LIBRARY FUNCTION [ARGUMENT]\n");
        return USAGE;
    }
    struct stopped thread = {.pid = atoi(argv[first])};
    const char *library = argv[first + 1], *function = argv[first + 2];
    const char *argument = argc - first == 4 ? argv[first + 3] : "";
    char why[512] = "";
    struct loader loader;
    if (!find_loader(thread.pid, &loader, why, sizeof why)) {
        fprintf(stderr, "process %d: %s\n", thread.pid, why);
        return FAILED;
    }
    enum exit_status status = stop_at_safe_point(&thread, why, sizeof why);
    if (status != OK) {
        fprintf(stderr, "process %d: %s\n", thread.pid, why);
        return status;
    }
    if (!save_xstate(&thread)) {
        let_go(&thread);
        fprintf(stderr, "process %d: cannot read the vector registers of thread %d\n", thread.pid, thread.tid);
        return FAILED;
    }
    /* The strings go below the red zone of the stack the thread was on. */
    uint64_t stack = (thread.saved.rsp - 128 - 4096) & ~(uint64_t)15;
    uint64_t library_at = stack, function_at = stack + 1024, argument_at = stack + 2048;
    uint64_t handle = 0, address = 0, result = 0;
    status = FAILED;
    if (!write_memory(thread.tid, library_at, library, strlen(library) + 1) ||
        !write_memory(thread.tid, function_at, function, strlen(function) + 1) ||
        !write_memory(thread.tid, argument_at, argument, strlen(argument) + 1)) {
        snprintf(why, sizeof why, "cannot write to the stack of thread %d", thread.tid);
    } else if (!call(&thread, loader.dlopen, (uint64_t[]){library_at, RTLD_NOW | (loaded ? RTLD_NOLOAD : 0)}, 2,
                     stack, &handle)) {
        snprintf(why, sizeof why, "thread %d did not come back from dlopen", thread.tid);
    } else if (!handle) {
        uint64_t message = 0;
        char text[300] = "not loaded";
        if (!loaded && call(&thread, loader.dlerror, NULL, 0, stack, &message) && message)
            read_string(thread.tid, message, text, sizeof text);
        snprintf(why, sizeof why, "cannot load %s: %s", library, text);
        status = MISSING;
    } else if (!call(&thread, loader.dlsym, (uint64_t[]){handle, function_at}, 2, stack, &address) || !address) {
        snprintf(why, sizeof why, "%s has no function %s", library, function);
        status = MISSING;
    } else if (!call(&thread, address, (uint64_t[]){argument_at}, 1, stack, &result)) {
        snprintf(why, sizeof why, "thread %d did not come back from %s", thread.tid, function);
    } else {
        status = OK;
    }
    restore(&thread);
    let_go(&thread);
    if (status != OK) {
        fprintf(stderr, "process %d: %s\n", thread.pid, why);
        return status;
    }
    printf("%d\n", (int)result);
    return OK;
}
