/* mprof-inject: calls a function of a shared library inside a running
 * process, as mprof attach and detach need: one of the process's threads,
 * stopped with ptrace where it waits in a system call (so that it holds none
 * of the allocator's or the dynamic loader's locks), loads the helper
 * library (helper.c), which runs dlopen(LIBRARY), dlsym(FUNCTION) and
 * FUNCTION(ARGUMENT) there, then goes back to its system call with every
 * register as it was.  The other threads run on meanwhile.
 *
 * Nothing of it may cost the process its life or a signal, whenever
 * mprof-inject itself ends:
 * - the thread runs the calls with every signal blocked but those a fault
 *   raises, so that what comes meanwhile stays pending, with its sender's
 *   siginfo, until its own mask is back;
 * - each call returns into the C library's signal return trampoline, over
 *   a signal frame holding the thread's registers, floating-point state and
 *   mask as they were: if mprof-inject is killed, the thread restores
 *   itself and restarts its system call.  While mprof-inject lives, it
 *   stops the thread at that rt_sigreturn and puts it back itself, as the
 *   kernel would after a signal the process ignores;
 * - SIGINT, SIGTERM, SIGHUP, SIGQUIT and the terminal's stop signals wait
 *   until the thread is let go.
 *
 * Usage: mprof-inject [--loaded] [--helper FILE] PID LIBRARY FUNCTION [ARGUMENT]
 * --loaded: only a library already loaded (dlopen's RTLD_NOLOAD), looked
 * for in the process's memory map before anything is called.
 * --helper: the helper library (default: libmprof-inject.so beside this
 * program); a copy the process's user can read, as mprof attach makes.
 * Prints FUNCTION's int result and exits 0; or one line on stderr and exits
 * 1 (the process cannot be traced: ptrace refused, or would be, as reading its map was; or shadow stacks), 2
 * (usage), 3 (the library or function is not there), 4 (no thread waited
 * in a system call in time, or the call failed).  A deferred signal then ends it as it would
 * have.  x86-64 only, as the monitor. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cpuid.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "request.h"
#include "safe_point.h"
#include "target.h"

/* The thread's extended (vector) state: AVX-512 and AMX make it 11 KB on
 * this generation of processors; the kernel says how much it used. */
#define XSTATE_ROOM 65536u
/* How long to look for a thread that waits in a system call. */
#define PATIENCE_NS 5000000000ull
/* User-sent fault signals (kill -SEGV) taken off the thread during the
 * calls, queued again after. */
#define TAKEN_MAX 32

enum exit_status { OK = 0, REFUSED = 1, USAGE = 2, MISSING = 3, FAILED = 4 };

struct stopped {
    pid_t pid, tid;
    struct user_regs_struct saved;
    unsigned char *xstate;
    size_t xstate_size;
    uint64_t mask; /* its blocked signals */
    siginfo_t taken[TAKEN_MAX];
    unsigned taken_count;
};

/* The kernel's x86-64 rt_sigframe, as rt_sigreturn reads it: the return
 * address the handler's ret consumed, then the ucontext (the signal mask
 * last, 8 bytes), then the siginfo, which rt_sigreturn does not read. */
struct kernel_ucontext {
    uint64_t flags, link;
    struct {
        uint64_t sp;
        int32_t flags, padding;
        uint64_t size;
    } stack;
    mcontext_t mcontext; /* the kernel's struct sigcontext */
    uint64_t mask;
};
struct signal_frame {
    uint64_t return_address;
    struct kernel_ucontext context;
    siginfo_t info;
};
_Static_assert(sizeof(mcontext_t) == 256 && offsetof(struct kernel_ucontext, mcontext) == 40 &&
                   offsetof(struct kernel_ucontext, mask) == 296,
               "the kernel's ucontext");

/* Where the kernel's signal frames say, in struct _fpx_sw_bytes, that the
 * floating-point state after the legacy 512 bytes is XSAVE's. */
#define XSAVE_SOFTWARE_AT 464u
#define XSAVE_HEADER_AT 512u
#define XSAVE_LEGACY_AND_HEADER 576u

/* uc_flags: the frame has XSAVE state, and a stack segment to be taken as it is. */
#define UC_FP_XSTATE 0x1u
#define UC_SIGCONTEXT_SS 0x2u
#define UC_STRICT_RESTORE_SS 0x4u

/* Where an injection's pieces are on the thread's stack. */
struct layout {
    uint64_t frame; /* the return address, the stack the calls start on */
    uint64_t request, library, function, argument, helper;
};

/* Blocked in this program from start to end (see the file's comment). */
static const int deferred_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU};

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static uint64_t signal_bit(int number)
{
    return 1ull << (number - 1);
}

/* The signals a fault raises: blocked, the kernel would make them fatal
 * and reset the program's handler. */
static bool raised_by_faults(int number)
{
    return number == SIGSEGV || number == SIGBUS || number == SIGILL || number == SIGFPE || number == SIGTRAP ||
           number == SIGSYS;
}

static bool deferred_signal_came(void)
{
    sigset_t pending;
    if (sigpending(&pending) != 0)
        return false;
    for (size_t i = 0; i < sizeof deferred_signals / sizeof *deferred_signals; i++)
        if (sigismember(&pending, deferred_signals[i]))
            return true;
    return false;
}

static bool write_memory(pid_t tid, uint64_t address, const void *data, size_t size)
{
    struct iovec local = {(void *)data, size}, remote = {(void *)(uintptr_t)address, size};
    if (process_vm_writev(tid, &local, 1, &remote, 1, 0) == (ssize_t)size)
        return true;
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

static bool read_memory(pid_t tid, uint64_t address, void *data, size_t size)
{
    struct iovec local = {data, size}, remote = {(void *)(uintptr_t)address, size};
    if (process_vm_readv(tid, &local, 1, &remote, 1, 0) == (ssize_t)size)
        return true;
    unsigned char *bytes = data;
    for (size_t done = 0; done < size; done += sizeof(long)) {
        errno = 0;
        long word = ptrace(PTRACE_PEEKDATA, tid, (void *)(address + done), NULL);
        if (errno)
            return false;
        memcpy(bytes + done, &word, size - done < sizeof word ? size - done : sizeof word);
    }
    return true;
}

/* Waits for the thread's next stop and says it as waitpid would; false
 * when the thread ended.  WNOWAIT leaves the stop's signal with the thread:
 * should this program die before it passes the signal on, the kernel
 * delivers it (a wait that took it would lose it).  Each stop or end of the
 * thread sends SIGCHLD, blocked here (block_deferred), but a thread that
 * another's exec ends wakes no wait for its id, which the kernel has passed
 * on to the thread that executed (not traced: waitid then fails): a wait
 * that slept would never end, so it looks again at least every 10 ms. */
static bool wait_stop(pid_t tid, int *status)
{
    siginfo_t info;
    sigset_t child;
    sigemptyset(&child);
    sigaddset(&child, SIGCHLD);
    for (;;) {
        memset(&info, 0, sizeof info);
        if (waitid(P_PID, (id_t)tid, &info, WSTOPPED | WEXITED | __WALL | WNOWAIT | WNOHANG) == 0) {
            if (info.si_pid)
                break;
            struct timespec pause = {0, 10000000};
            sigtimedwait(&child, NULL, &pause);
        } else if (errno != EINTR) {
            return false;
        }
    }
    if (info.si_code != CLD_TRAPPED && info.si_code != CLD_STOPPED)
        return false;
    *status = info.si_status << 8 | 0x7f;
    return true;
}

/* Stops the thread with PTRACE_SEIZE and PTRACE_INTERRUPT, and reads its
 * registers: whether it stopped at a safe point is the caller's to judge. */
static enum exit_status stop_thread(struct stopped *thread, char *why, size_t why_size)
{
    if (ptrace(PTRACE_SEIZE, thread->tid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD) != 0) {
        ptrace_refusal(thread->pid, errno, why, why_size);
        return REFUSED;
    }
    int status;
    if (ptrace(PTRACE_INTERRUPT, thread->tid, NULL, NULL) != 0 || !wait_stop(thread->tid, &status)) {
        snprintf(why, why_size, "thread %d ended as it was stopped", thread->tid);
        return FAILED;
    }
    /* A signal that was on its way takes the place of the interrupt's stop,
     * and ends the interrupt: it is passed on, the thread interrupted again
     * first (an interrupt of a stopped thread lasts), and the interrupt's
     * own stop comes next. */
    while (!(status >> 16)) {
        if (ptrace(PTRACE_INTERRUPT, thread->tid, NULL, NULL) != 0 ||
            ptrace(PTRACE_CONT, thread->tid, NULL, (void *)(long)WSTOPSIG(status)) != 0 ||
            !wait_stop(thread->tid, &status)) {
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

/* A thread waiting at a safe point, stopped there; FAILED when none was
 * found in time, or a deferred signal says to stop looking. */
static enum exit_status stop_at_safe_point(struct stopped *thread, char *why, size_t why_size)
{
    uint64_t give_up = now_ns() + PATIENCE_NS;
    do {
        if (deferred_signal_came()) {
            snprintf(why, why_size, "interrupted before any thread was stopped");
            return FAILED;
        }
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

static bool save_state(struct stopped *thread)
{
    thread->xstate = calloc(1, XSTATE_ROOM);
    struct iovec state = {thread->xstate, XSTATE_ROOM};
    if (!thread->xstate || ptrace(PTRACE_GETREGSET, thread->tid, (void *)NT_X86_XSTATE, &state) != 0 ||
        state.iov_len < XSAVE_LEGACY_AND_HEADER)
        return false;
    thread->xstate_size = state.iov_len;
    return ptrace(PTRACE_GETSIGMASK, thread->tid, (void *)sizeof thread->mask, &thread->mask) == 0;
}

/* The bytes of the XSAVE image (standard format) that hold the components
 * in use: those past the last one are not read back. */
static uint32_t xstate_used_size(uint64_t components)
{
    uint32_t size = XSAVE_LEGACY_AND_HEADER;
    for (unsigned i = 2; i < 64; i++) {
        unsigned size_of, offset, supervisor, unused;
        if (!(components >> i & 1) || !__get_cpuid_count(0xd, i, &size_of, &offset, &supervisor, &unused) ||
            (supervisor & 1))
            continue;
        if (offset + size_of > size)
            size = offset + size_of;
    }
    return size;
}

/* The registers the thread gets from the frame if mprof-inject is gone:
 * its system call started again, as the kernel restarts one (from the
 * start, when it would have continued it: the frame cannot carry the
 * kernel's restart block). */
static void fill_frame(const struct stopped *thread, const struct loader *loader, uint64_t fpstate,
                       struct signal_frame *frame)
{
    struct user_regs_struct regs = thread->saved;
    long result = (long)regs.rax;
    if (result <= -ERESTARTSYS && result >= -ERESTART_RESTARTBLOCK) {
        regs.rax = regs.orig_rax;
        regs.rip -= 2;
    }
    greg_t *g = frame->context.mcontext.gregs;
    g[REG_R8] = (greg_t)regs.r8, g[REG_R9] = (greg_t)regs.r9, g[REG_R10] = (greg_t)regs.r10;
    g[REG_R11] = (greg_t)regs.r11, g[REG_R12] = (greg_t)regs.r12, g[REG_R13] = (greg_t)regs.r13;
    g[REG_R14] = (greg_t)regs.r14, g[REG_R15] = (greg_t)regs.r15, g[REG_RDI] = (greg_t)regs.rdi;
    g[REG_RSI] = (greg_t)regs.rsi, g[REG_RBP] = (greg_t)regs.rbp, g[REG_RBX] = (greg_t)regs.rbx;
    g[REG_RDX] = (greg_t)regs.rdx, g[REG_RAX] = (greg_t)regs.rax, g[REG_RCX] = (greg_t)regs.rcx;
    g[REG_RSP] = (greg_t)regs.rsp, g[REG_RIP] = (greg_t)regs.rip, g[REG_EFL] = (greg_t)regs.eflags;
    g[REG_CSGSFS] = (greg_t)((regs.cs & 0xffff) | (regs.ss & 0xffff) << 48);
    frame->context.mcontext.fpregs = (fpregset_t)(uintptr_t)fpstate;
    frame->context.flags = UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
    /* Flags sigaltstack refuses: rt_sigreturn then leaves the thread's
     * alternate stack as it is, which mprof-inject cannot read. */
    frame->context.stack.flags = SS_ONSTACK | SS_DISABLE;
    frame->context.mask = thread->mask;
    frame->return_address = loader->restorer;
}

/* The strings, the request, the floating-point state and the signal frame,
 * below the red zone of the stack the thread was on. */
static bool lay_out(const struct stopped *thread, const struct loader *loader, const char *strings[4],
                    bool only_loaded, struct layout *layout)
{
    size_t lengths[4], total = 0;
    for (int i = 0; i < 4; i++)
        total += lengths[i] = strlen(strings[i]) + 1;
    uint64_t top = thread->saved.rsp - 128;
    uint64_t strings_at = (top - total) & ~(uint64_t)15;
    layout->request = (strings_at - sizeof(struct inject_request)) & ~(uint64_t)15;
    uint64_t used = 0;
    memcpy(&used, thread->xstate + XSAVE_HEADER_AT, sizeof used);
    uint32_t fp_size = xstate_used_size(used);
    if (fp_size > thread->xstate_size)
        return false;
    uint64_t fpstate = (layout->request - fp_size - FP_XSTATE_MAGIC2_SIZE) & ~(uint64_t)63; /* XRSTOR's alignment */
    /* A function starts with its return address at 8 past a multiple of 16. */
    layout->frame = ((fpstate - sizeof(struct signal_frame)) & ~(uint64_t)15) - 8;

    size_t size = top - layout->frame;
    unsigned char *image = calloc(1, size);
    if (!image)
        return false;
    uint64_t *addresses[4] = {&layout->library, &layout->function, &layout->argument, &layout->helper};
    uint64_t at = strings_at;
    for (int i = 0; i < 4; i++) {
        *addresses[i] = at;
        memcpy(image + (at - layout->frame), strings[i], lengths[i]);
        at += lengths[i];
    }
    struct inject_request request = {.library = layout->library, .function = layout->function,
                                     .argument = layout->argument, .only_loaded = only_loaded,
                                     .outcome = INJECT_PENDING};
    memcpy(image + (layout->request - layout->frame), &request, sizeof request);
    unsigned char *fp = image + (fpstate - layout->frame);
    memcpy(fp, thread->xstate, fp_size);
    /* The components not in use are in their initial state, which is
     * what rt_sigreturn gives those the frame does not name. */
    struct _fpx_sw_bytes software = {.magic1 = FP_XSTATE_MAGIC1, .extended_size = fp_size + FP_XSTATE_MAGIC2_SIZE,
                                     .xstate_bv = used | 3, .xstate_size = fp_size};
    memcpy(fp + XSAVE_SOFTWARE_AT, &software, sizeof software);
    uint32_t magic2 = FP_XSTATE_MAGIC2;
    memcpy(fp + fp_size, &magic2, sizeof magic2);
    struct signal_frame frame = {0};
    fill_frame(thread, loader, fpstate, &frame);
    memcpy(image, &frame, sizeof frame);
    bool written = write_memory(thread->tid, layout->frame, image, size);
    free(image);
    return written;
}

/* Points the thread at function(argument), to return into the restorer
 * over the frame; the system call it was in is not restarted meanwhile. */
static bool set_off(const struct stopped *thread, const struct layout *layout, uint64_t function,
                    uint64_t first, uint64_t second)
{
    struct user_regs_struct regs = thread->saved;
    regs.rdi = first;
    regs.rsi = second;
    regs.rsp = layout->frame;
    regs.rip = function;
    regs.rax = 0;
    regs.orig_rax = (uint64_t)-1;
    regs.eflags &= ~(1ull << 10); /* the ABI's direction flag, clear at a call */
    return ptrace(PTRACE_SETREGS, thread->tid, NULL, &regs) == 0;
}

enum came_back { RETURNED, FAULTED, GONE };

/* Keeps a user-sent signal the thread would have taken now, to queue it
 * again once the thread is back. */
static void take(struct stopped *thread, const siginfo_t *info)
{
    if (thread->taken_count < TAKEN_MAX)
        thread->taken[thread->taken_count++] = *info;
}

/* Lets the thread run until it calls rt_sigreturn from the restorer over
 * the frame (RETURNED, stopped there; a handler of a signal delivered
 * meanwhile returns through the same restorer, over a frame further down),
 * faults (FAULTED, stopped at the signal), or the process ends or execs
 * (GONE). */
static enum came_back run(struct stopped *thread, const struct loader *loader, const struct layout *layout,
                          int *fault)
{
    int deliver = 0;
    for (;;) {
        int status;
        if (ptrace(PTRACE_SYSCALL, thread->tid, NULL, (void *)(long)deliver) != 0 || !wait_stop(thread->tid, &status))
            return GONE;
        deliver = 0;
        int number = WSTOPSIG(status);
        if (number == (SIGTRAP | 0x80)) {
            struct user_regs_struct regs;
            if (ptrace(PTRACE_GETREGS, thread->tid, NULL, &regs) != 0)
                return GONE;
            if (regs.orig_rax == SYS_rt_sigreturn && regs.rsp == layout->frame + 8 &&
                regs.rip > loader->restorer && regs.rip <= loader->restorer + sizeof loader->restorer_code)
                return RETURNED;
            continue;
        }
        if (status >> 16) /* a group stop: this thread goes on with the calls */
            continue;
        if (number == SIGSTOP) { /* stops the process's other threads; this one comes next */
            deliver = SIGSTOP;
            continue;
        }
        siginfo_t info;
        if (ptrace(PTRACE_GETSIGINFO, thread->tid, NULL, &info) != 0)
            return GONE;
        if (info.si_code <= 0) {
            take(thread, &info);
        } else if (raised_by_faults(number) && number != SIGSYS) {
            *fault = number;
            return FAULTED;
        } else {
            deliver = number; /* a seccomp filter's SIGSYS: the program's handler answers it */
        }
    }
}

/* From the restorer's rt_sigreturn, which is skipped, to a stop inside the
 * kernel's signal delivery, where the thread's own registers can be put
 * back as after a signal it ignored.  Should mprof-inject end before, the
 * thread runs the restorer again. */
static bool stop_in_delivery(struct stopped *thread, const struct loader *loader)
{
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, thread->tid, NULL, &regs) != 0)
        return false;
    regs.orig_rax = (uint64_t)-1;
    regs.rip = loader->restorer;
    if (ptrace(PTRACE_SETREGS, thread->tid, NULL, &regs) != 0 ||
        ptrace(PTRACE_INTERRUPT, thread->tid, NULL, NULL) != 0)
        return false;
    int deliver = 0;
    for (;;) {
        int status;
        if (ptrace(PTRACE_CONT, thread->tid, NULL, (void *)(long)deliver) != 0 || !wait_stop(thread->tid, &status))
            return false;
        deliver = 0;
        if (status >> 16 == PTRACE_EVENT_STOP)
            return true;
        if (status >> 16)
            continue;
        /* A signal's stop, which ends the interrupt: another one. */
        siginfo_t info;
        if (ptrace(PTRACE_GETSIGINFO, thread->tid, NULL, &info) != 0 ||
            ptrace(PTRACE_INTERRUPT, thread->tid, NULL, NULL) != 0)
            return false;
        if (WSTOPSIG(status) == SIGSTOP || info.si_code > 0)
            deliver = WSTOPSIG(status);
        else
            take(thread, &info);
    }
}

/* At a stop inside signal delivery: the thread's mask, vector state and
 * registers back (the mask first: it must never run on blocked), the
 * signals taken queued again as they came where the kernel allows it, and
 * the thread let go into its system call. */
static void put_back(struct stopped *thread)
{
    struct iovec state = {thread->xstate, thread->xstate_size};
    /* The calls may have used the thread's restart block (a nanosleep or
     * poll of their own): a system call the kernel would have continued
     * through it starts again from the start, as from the frame. */
    if ((long)thread->saved.rax == -ERESTART_RESTARTBLOCK)
        thread->saved.rax = (uint64_t)-ERESTARTNOINTR;
    ptrace(PTRACE_SETSIGMASK, thread->tid, (void *)sizeof thread->mask, &thread->mask);
    ptrace(PTRACE_SETREGSET, thread->tid, (void *)NT_X86_XSTATE, &state);
    ptrace(PTRACE_SETREGS, thread->tid, NULL, &thread->saved);
    for (unsigned i = 0; i < thread->taken_count; i++) {
        siginfo_t *info = &thread->taken[i];
        /* The kernel lets no other process forge kill's or tgkill's codes. */
        if (info->si_code == SI_USER || info->si_code == SI_TKILL ||
            syscall(SYS_rt_tgsigqueueinfo, thread->pid, thread->tid, info->si_signo, info) != 0)
            syscall(SYS_tgkill, thread->pid, thread->tid, info->si_signo);
    }
    ptrace(PTRACE_DETACH, thread->tid, NULL, NULL);
}

/* Runs function(first, second) on the thread, from the stop it is in, and
 * leaves it stopped inside signal delivery; false when the process ended
 * or the call faulted (said in why). */
static bool call(struct stopped *thread, const struct loader *loader, const struct layout *layout,
                 uint64_t function, uint64_t first, uint64_t second, const char *what, bool *gone, char *why,
                 size_t why_size)
{
    /* Signals stay pending during the calls; the mask goes on after the
     * registers, so that the thread never waits in its system call with it. */
    uint64_t during = ~(signal_bit(SIGKILL) | signal_bit(SIGSTOP));
    for (int number = 1; number < 32; number++)
        if (raised_by_faults(number))
            during &= ~signal_bit(number);
    int fault = 0;
    enum came_back back = GONE;
    if (set_off(thread, layout, function, first, second) &&
        ptrace(PTRACE_SETSIGMASK, thread->tid, (void *)sizeof during, &during) == 0)
        back = run(thread, loader, layout, &fault);
    if (back == RETURNED && stop_in_delivery(thread, loader))
        return true;
    *gone = back != FAULTED;
    if (back == FAULTED)
        snprintf(why, why_size, "thread %d faulted in %s (signal %d)", thread->tid, what, fault);
    else
        snprintf(why, why_size, "thread %d did not come back from %s: the process ended or executed "
                 "another program", thread->tid, what);
    return false;
}

static void block_deferred(sigset_t *before)
{
    sigset_t blocked;
    sigemptyset(&blocked);
    for (size_t i = 0; i < sizeof deferred_signals / sizeof *deferred_signals; i++)
        sigaddset(&blocked, deferred_signals[i]);
    /* And SIGCHLD, kept pending for wait_stop (which an ignored one, as a
     * parent may leave it across exec, would not be for a stop). */
    signal(SIGCHLD, SIG_DFL);
    sigaddset(&blocked, SIGCHLD);
    sigprocmask(SIG_BLOCK, &blocked, before);
}

/* The helper beside this program, as make and make install put it. */
static bool default_helper(char *path, size_t capacity)
{
    ssize_t length = readlink("/proc/self/exe", path, capacity - 32);
    if (length <= 0 || (size_t)length >= capacity - 32) /* perhaps cut short, its directory too */
        return false;
    path[length] = '\0';
    char *slash = strrchr(path, '/');
    if (!slash)
        return false;
    strcpy(slash + 1, "libmprof-inject.so");
    return true;
}

/* The helper's entry point, as an offset into its file's mapping. */
static bool helper_entry(const char *helper, uint64_t *offset)
{
    void *handle = dlopen(helper, RTLD_NOW | RTLD_LOCAL);
    void *entry = handle ? dlsym(handle, INJECT_ENTRY) : NULL;
    Dl_info where;
    if (!entry || !dladdr(entry, &where))
        return false;
    *offset = (uint64_t)(uintptr_t)entry - (uint64_t)(uintptr_t)where.dli_fbase;
    return true;
}

/* The injection from the thread's stop at a safe point to its return:
 * OK with the request's answer read back, or why not. */
static enum exit_status inject(struct stopped *thread, const struct loader *loader, const char *strings[4],
                               bool only_loaded, uint64_t entry_offset, struct inject_request *answer,
                               char *why, size_t why_size)
{
    const char *library = strings[0], *helper = strings[3];
    if (only_loaded && !library_mapped_at(thread->pid, library)) {
        /* Looked for with the thread stopped: an exec since would have ended it. */
        ptrace(PTRACE_DETACH, thread->tid, NULL, NULL);
        snprintf(why, why_size, "cannot load %s: not loaded", library);
        return MISSING;
    }
    unsigned char code[sizeof loader->restorer_code];
    struct layout layout;
    if (!save_state(thread) || !read_memory(thread->tid, loader->restorer, code, sizeof code) ||
        memcmp(code, loader->restorer_code, sizeof code) != 0 ||
        !lay_out(thread, loader, strings, only_loaded, &layout)) {
        ptrace(PTRACE_DETACH, thread->tid, NULL, NULL);
        snprintf(why, why_size, "cannot prepare thread %d's stack and registers for the call", thread->tid);
        return FAILED;
    }
    bool gone = false;
    enum exit_status status = FAILED;
    uint64_t helper_base = library_mapped_at(thread->pid, helper);
    if (!helper_base) {
        if (!call(thread, loader, &layout, loader->dlopen, layout.helper, RTLD_NOW, "dlopen", &gone, why, why_size))
            goto out;
        helper_base = library_mapped_at(thread->pid, helper);
        if (!helper_base) {
            snprintf(why, why_size, "cannot load %s (can the process's user read it?)", helper);
            status = MISSING;
            goto out;
        }
    }
    if (!call(thread, loader, &layout, helper_base + entry_offset, layout.request, 0, "the helper", &gone, why,
              why_size))
        goto out;
    if (!read_memory(thread->tid, layout.request, answer, sizeof *answer)) {
        snprintf(why, why_size, "cannot read what the call in thread %d answered", thread->tid);
        goto out;
    }
    answer->message[sizeof answer->message - 1] = '\0';
    status = OK;
out:
    if (!gone)
        put_back(thread);
    return status;
}

int main(int argc, char **argv)
{
    bool loaded = false;
    char helper[PATH_MAX] = "";
    int first = 1;
    for (; first < argc; first++) {
        if (!strcmp(argv[first], "--loaded"))
            loaded = true;
        else if (!strcmp(argv[first], "--helper") && first + 1 < argc && strlen(argv[first + 1]) < sizeof helper)
            strcpy(helper, argv[++first]);
        else
            break;
    }
    if (argc - first < 3 || argc - first > 4) {
        fprintf(stderr, "usage: mprof-inject [--loaded] [--helper FILE] PID LIBRARY FUNCTION [ARGUMENT]\n");
        return USAGE;
    }
    if (!helper[0] && !default_helper(helper, sizeof helper)) {
        fprintf(stderr, "mprof-inject: cannot find its own directory\n");
        return FAILED;
    }
    struct stopped thread = {.pid = atoi(argv[first])};
    const char *strings[4] = {argv[first + 1], argv[first + 2], argc - first == 4 ? argv[first + 3] : "", helper};
    char why[512] = "";
    uint64_t entry_offset = 0;
    if (!helper_entry(helper, &entry_offset)) {
        fprintf(stderr, "process %d: %s is not mprof-inject's helper library (run make first)\n", thread.pid,
                helper);
        return FAILED;
    }
    if (shadow_stack_enabled(thread.pid)) {
        fprintf(stderr, "process %d: it runs with x86 shadow stacks, which a call set up from outside breaks: "
                "start it under mprof run\n", thread.pid);
        return REFUSED;
    }
    /* Reading the map asks less than ptrace does: refused, ptrace would be
     * too, and its refusal says why (else the map would seem to lack the C
     * library). */
    int unreadable = memory_map_error(thread.pid);
    if (unreadable) {
        ptrace_refusal(thread.pid, unreadable == ENOENT ? ESRCH : unreadable == EACCES ? EPERM : unreadable, why,
                       sizeof why);
        fprintf(stderr, "process %d: %s\n", thread.pid, why);
        return REFUSED;
    }
    struct loader loader;
    if (!find_loader(thread.pid, &loader, why, sizeof why)) {
        fprintf(stderr, "process %d: %s\n", thread.pid, why);
        return FAILED;
    }
    sigset_t before;
    block_deferred(&before);
    enum exit_status status = stop_at_safe_point(&thread, why, sizeof why);
    struct inject_request answer = {0};
    if (status == OK)
        status = inject(&thread, &loader, strings, loaded, entry_offset, &answer, why, sizeof why);
    if (status == OK && answer.outcome == INJECT_NO_LIBRARY) {
        snprintf(why, sizeof why, "cannot load %s: %s", strings[0], answer.message);
        status = MISSING;
    } else if (status == OK && answer.outcome != INJECT_DONE) {
        snprintf(why, sizeof why, "%s has no function %s", strings[0], strings[1]);
        status = MISSING;
    }
    if (status != OK)
        fprintf(stderr, "process %d: %s\n", thread.pid, why);
    else
        printf("%d\n", (int)answer.result);
    fflush(NULL);
    sigprocmask(SIG_SETMASK, &before, NULL); /* a deferred signal ends this program now */
    return status;
}
