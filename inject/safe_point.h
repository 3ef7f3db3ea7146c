/* Where a thread can be made to call the dynamic loader: waiting in a
 * system call that neither the allocator nor the loader makes while it
 * holds a lock (reading, polling, accepting, sleeping, waiting for a
 * child), never in mmap, brk or a futex.  And why a process is refused. */
#ifndef MPROF_INJECT_SAFE_POINT_H
#define MPROF_INJECT_SAFE_POINT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/user.h>

/* The kernel's codes for a system call interrupted to be restarted. */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTART_RESTARTBLOCK 516

/* A thread of pid that waits in such a system call now (the main thread
 * first), 0 when none does, -1 when the process is gone. */
pid_t thread_at_safe_point(pid_t pid);
/* Whether a thread stopped with these registers was interrupted in one. */
bool at_safe_point(const struct user_regs_struct *regs);
/* Whether the process runs with x86 shadow stacks, which check every
 * return against the calls made: a call mprof-inject sets up has none. */
bool shadow_stack_enabled(pid_t pid);
/* Why PTRACE_SEIZE of pid failed with error, in words a user can act on. */
void ptrace_refusal(pid_t pid, int error, char *why, size_t why_size);

#endif
