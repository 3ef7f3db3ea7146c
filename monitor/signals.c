/* The program's signal dispositions as it set them, and the monitor's
 * handler behind those that would end the process (see signals.h). */
#include "signals.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "compiler.h"
#include "lock.h"
#include "monitor.h"
#include "state.h"

/* Signals whose default action ends the process, less SIGTRAP (debuggers
 * own it) and the real-time ones (libraries claim those for themselves). */
static const int ending_signals[] = {
    SIGHUP,  SIGINT,    SIGQUIT, SIGILL,  SIGABRT, SIGBUS,  SIGFPE,  SIGUSR1, SIGSEGV, SIGUSR2,
    SIGPIPE, SIGALRM,   SIGTERM, SIGSTKFLT, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO, SIGPWR,
    SIGSYS,
};

struct disposition {
    struct sigaction program; /* what the program set, or found in place */
    bool watched;             /* the monitor's handler is installed in its place */
};

/* Changed under lock by the wrappers, with every signal blocked: sigaction
 * is async-signal-safe, so a handler may call it on a thread that holds the
 * lock.  Read without it by the monitor's handler, which must not wait.  A
 * program that changes a disposition while that signal arrives meets the
 * same race without the monitor. */
static spinlock_t lock = SPINLOCK_INIT;
static struct disposition dispositions[NSIG];
/* Set once by signals_watch, before the program's main. */
static bool watching;

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

static int forward(int signal_number, const struct sigaction *action, struct sigaction *previous)
{
    if (!real_sigaction)
        real_sigaction = (__typeof__(real_sigaction))dlsym(RTLD_NEXT, "sigaction");
    if (!real_sigaction) {
        errno = ENOSYS;
        return -1;
    }
    return real_sigaction(signal_number, action, previous);
}

static void take_lock(sigset_t *previous)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, previous);
    spin_lock(&lock);
}

static void drop_lock(const sigset_t *previous)
{
    spin_unlock(&lock);
    pthread_sigmask(SIG_SETMASK, previous, NULL);
}

static bool is_ending(int signal_number)
{
    for (unsigned i = 0; i < sizeof ending_signals / sizeof ending_signals[0]; i++)
        if (ending_signals[i] == signal_number)
            return true;
    return false;
}

/* A fault the instruction raises again when the handler returns, this time
 * with the default action: the core shows the faulting instruction.  A
 * signal that was sent, or an asynchronous machine check, is raised again
 * instead. */
static bool repeats_on_return(int signal_number, const siginfo_t *info)
{
    if (signal_number != SIGSEGV && signal_number != SIGBUS && signal_number != SIGILL &&
        signal_number != SIGFPE)
        return false;
    return info->si_code > 0 && !(signal_number == SIGBUS && info->si_code == BUS_MCEERR_AO);
}

static void take_default_course(int signal_number, const siginfo_t *info)
{
    /* No leak scan: the fault may have come with the loader's lock held or
     * the heap broken. */
    monitor_finish(signal_number, NULL);
    struct sigaction default_action = {.sa_handler = SIG_DFL};
    sigemptyset(&default_action.sa_mask);
    forward(signal_number, &default_action, NULL);
    /* Blocked while this handler runs, so it is delivered as it returns. */
    if (!repeats_on_return(signal_number, info))
        raise(signal_number);
}

static void on_signal(int signal_number, siginfo_t *info, void *context)
{
    int saved_errno = errno;
    struct disposition *disposition = &dispositions[signal_number];
    struct sigaction program = disposition->program;
    if (program.sa_handler == SIG_DFL) {
        take_default_course(signal_number, info);
        errno = saved_errno;
        return;
    }
    if (program.sa_handler == SIG_IGN) /* a race with the wrapper: as the program asked */
        return;
    if (program.sa_flags & SA_RESETHAND) {
        /* The kernel would have reset it on delivery; the monitor's handler
         * stays, and now stands for SIG_DFL. */
        disposition->program.sa_handler = SIG_DFL;
        disposition->program.sa_flags &= ~(SA_SIGINFO | SA_RESETHAND);
    }
    errno = saved_errno;
    if (program.sa_flags & SA_SIGINFO)
        program.sa_sigaction(signal_number, info, context);
    else
        program.sa_handler(signal_number);
}

/* The monitor's handler in the program's place: with the program's mask
 * and flags, so that an alternate stack, SA_NODEFER or SA_RESTART act as
 * it asked; SA_RESETHAND is emulated in on_signal. */
static struct sigaction in_place_of(const struct sigaction *program)
{
    struct sigaction ours = {.sa_sigaction = on_signal};
    if (program->sa_handler == SIG_DFL) {
        sigemptyset(&ours.sa_mask);
        ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    } else {
        ours.sa_mask = program->sa_mask;
        ours.sa_flags = (program->sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
    }
    return ours;
}

void signals_watch(int except)
{
    sigset_t previous;
    take_lock(&previous);
    for (unsigned i = 0; i < sizeof ending_signals / sizeof ending_signals[0]; i++) {
        int signal_number = ending_signals[i];
        struct sigaction current;
        if (signal_number == except || forward(signal_number, NULL, &current) != 0)
            continue;
        dispositions[signal_number].program = current;
        /* An ignored signal stays ignored, for this process and for what it
         * executes: a handler would not be inherited across exec. */
        if (current.sa_handler == SIG_IGN)
            continue;
        struct sigaction ours = in_place_of(&current);
        dispositions[signal_number].watched = forward(signal_number, &ours, NULL) == 0;
    }
    watching = true;
    drop_lock(&previous);
}

void signals_install_own(int signal_number, const struct sigaction *action)
{
    forward(signal_number, action, NULL);
}

EXPORT int sigaction(int signal_number, const struct sigaction *action, struct sigaction *previous)
{
    if (!watching || signal_number <= 0 || signal_number >= NSIG || !is_ending(signal_number))
        return forward(signal_number, action, previous);
    /* A vfork child (CPython's subprocess resets every handler in one
     * before it execs) shares the parent's memory but not its
     * dispositions: the parent's record must stay as it is. */
    if (getpid() != monitor.pid)
        return forward(signal_number, action, previous);
    sigset_t mask;
    take_lock(&mask);
    struct disposition *disposition = &dispositions[signal_number];
    if (!disposition->watched && !action) {
        drop_lock(&mask);
        return forward(signal_number, action, previous);
    }
    struct sigaction before = disposition->program;
    int result = 0;
    if (action) {
        struct sigaction installed = action->sa_handler == SIG_IGN ? *action : in_place_of(action);
        result = forward(signal_number, &installed, NULL);
        if (result == 0) {
            disposition->program = *action;
            disposition->watched = action->sa_handler != SIG_IGN;
        }
    }
    int error = errno;
    drop_lock(&mask);
    errno = error;
    if (result == 0 && previous)
        *previous = before;
    return result;
}

/* glibc's signal() and its kin set dispositions without going through the
 * sigaction symbol, so each is wrapped too, with the semantics it has. */
static __sighandler_t set_handler(int signal_number, __sighandler_t handler, int flags)
{
    struct sigaction action = {.sa_handler = handler, .sa_flags = flags}, previous;
    sigemptyset(&action.sa_mask);
    if (!(flags & SA_NODEFER) && signal_number > 0 && signal_number < NSIG)
        sigaddset(&action.sa_mask, signal_number);
    return sigaction(signal_number, &action, &previous) == 0 ? previous.sa_handler : SIG_ERR;
}

EXPORT __sighandler_t signal(int signal_number, __sighandler_t handler)
{
    return set_handler(signal_number, handler, SA_RESTART);
}

EXPORT __sighandler_t bsd_signal(int signal_number, __sighandler_t handler)
{
    return set_handler(signal_number, handler, SA_RESTART);
}

EXPORT __sighandler_t sysv_signal(int signal_number, __sighandler_t handler)
{
    return set_handler(signal_number, handler, SA_RESETHAND | SA_NODEFER);
}

EXPORT int sigignore(int signal_number)
{
    return set_handler(signal_number, SIG_IGN, 0) == SIG_ERR ? -1 : 0;
}
