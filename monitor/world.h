/* Stopping the process's other threads for the leak scan, and reading
 * their registers, from a tracer task that shares the address space (as
 * LeakSanitizer does): ptrace stops, which the program cannot observe. */
#ifndef MPROF_WORLD_H
#define MPROF_WORLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The general registers a stopped thread holds pointers in, as
 * PTRACE_GETREGS gives them, and its stack pointer and thread pointer. */
#define WORLD_REGISTERS 27
struct stopped_thread {
    pid_t tid;
    uintptr_t stack_pointer;
    uintptr_t thread_pointer; /* fs_base: its TCB, beside its static TLS */
    uint64_t registers[WORLD_REGISTERS];
};

/* At most this many threads are stopped; more are counted as unstopped. */
#define WORLD_THREADS_MAX 4096

struct world {
    struct stopped_thread *threads; /* the stopped ones */
    size_t count;
    size_t unstopped; /* threads that could not be stopped (traced already) */
    /* The tracer's state, shared with it. */
    void *tracer_stack;
    pid_t tracer;
    _Atomic int phase;
};

/* Stops every thread but the calling one; false, and nothing stopped, when
 * the tracer cannot be started or must not be (a seccomp filter governs
 * the process): then every other thread is unstopped.  With no other
 * thread, nothing is started. */
bool world_stop(struct world *world);
/* Lets them go on; waits for the tracer's end. */
void world_resume(struct world *world);

#endif
