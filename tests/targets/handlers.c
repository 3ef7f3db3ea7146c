/* The program's own signal handlers, as it sees them: what sigaction and
 * signal report, handlers that recover from faults with siglongjmp,
 * SA_RESETHAND, SIG_IGN.  Prints what it saw; the same lines with and
 * without the monitor. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static sigjmp_buf recovery;
static volatile sig_atomic_t faults, interrupts, usr1s;
static volatile uintptr_t fault_address;

static void on_fault(int signal_number, siginfo_t *info, void *context)
{
    (void)signal_number, (void)context;
    faults++;
    fault_address = (uintptr_t)info->si_addr;
    siglongjmp(recovery, 1);
}

static void on_interrupt(int signal_number)
{
    (void)signal_number;
    interrupts++;
}

static void on_usr1(int signal_number)
{
    (void)signal_number;
    usr1s++;
}

static volatile sig_atomic_t alarms;

/* sigaction is async-signal-safe: a handler may call it while the thread it
 * interrupted is inside sigaction itself. */
static void on_alarm(int signal_number)
{
    (void)signal_number;
    struct sigaction action = {.sa_handler = alarms % 2 ? SIG_DFL : on_usr1};
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR2, &action, NULL);
    alarms++;
}

static const char *name(void (*handler)(int))
{
    return handler == SIG_DFL ? "SIG_DFL" : handler == SIG_IGN ? "SIG_IGN"
         : handler == on_interrupt ? "on_interrupt" : handler == on_usr1 ? "on_usr1"
         : handler == (void (*)(int))on_fault ? "on_fault" : "something else";
}

int main(void)
{
    struct sigaction seen;
    for (int s = 1; s < 32; s++) {
        if (s == SIGKILL || s == SIGSTOP)
            continue;
        sigaction(s, NULL, &seen);
        if (seen.sa_handler != SIG_DFL)
            printf("signal %d starts as %s\n", s, name(seen.sa_handler));
    }
    struct sigaction fault = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_NODEFER};
    sigemptyset(&fault.sa_mask);
    sigaction(SIGSEGV, &fault, &seen);
    printf("SIGSEGV was %s\n", name(seen.sa_handler));
    for (int i = 0; i < 3; i++) {
        void *block = malloc(16 * (i + 1));
        if (!sigsetjmp(recovery, 1))
            *(volatile int *)(uintptr_t)(0x10 + i) = 1;
        free(block);
    }
    printf("recovered from %d faults, the last at %#lx\n", (int)faults, (unsigned long)fault_address);
    sigaction(SIGSEGV, NULL, &seen);
    printf("SIGSEGV is %s, flags %#x\n", name(seen.sa_handler),
           (unsigned)(seen.sa_flags & (SA_SIGINFO | SA_NODEFER | SA_RESETHAND | SA_ONSTACK)));

    printf("signal(SIGINT) was %s\n", name(signal(SIGINT, on_interrupt)));
    raise(SIGINT);
    raise(SIGINT);
    printf("SIGINT handled %d times; signal(SIGINT) was %s\n", (int)interrupts, name(signal(SIGINT, SIG_DFL)));

    printf("signal(SIGTERM) was %s\n", name(signal(SIGTERM, SIG_IGN)));
    raise(SIGTERM);
    sigaction(SIGTERM, NULL, &seen);
    printf("SIGTERM ignored, now %s\n", name(seen.sa_handler));

    struct sigaction once = {.sa_handler = on_usr1, .sa_flags = SA_RESETHAND};
    sigemptyset(&once.sa_mask);
    sigaction(SIGUSR1, &once, NULL);
    raise(SIGUSR1);
    sigaction(SIGUSR1, NULL, &seen);
    printf("SIGUSR1 handled %d times, then reset to %s\n", (int)usr1s, name(seen.sa_handler));
    printf("sigaction(SIGKILL) fails: %d\n", sigaction(SIGKILL, &once, NULL));

    struct sigaction alarm_action = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigemptyset(&alarm_action.sa_mask);
    sigaction(SIGALRM, &alarm_action, NULL);
    struct itimerval every = {{0, 100}, {0, 100}}, off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &every, NULL);
    struct sigaction usr2 = {.sa_handler = on_usr1};
    sigemptyset(&usr2.sa_mask);
    for (int i = 0; i < 300000; i++)
        sigaction(SIGUSR2, &usr2, NULL);
    setitimer(ITIMER_REAL, &off, NULL);
    printf("sigaction in a handler while sigaction ran: %s\n", alarms > 0 ? "done" : "no alarm");

    /* A vfork child shares this memory but not these dispositions; it
     * resets its own before it execs, as CPython's subprocess does. */
    usr1s = 0;
    struct sigaction kept = {.sa_handler = on_usr1};
    sigemptyset(&kept.sa_mask);
    sigaction(SIGUSR1, &kept, NULL);
    pid_t child = vfork();
    if (child == 0) {
        struct sigaction reset = {.sa_handler = SIG_DFL};
        sigemptyset(&reset.sa_mask);
        sigaction(SIGUSR1, &reset, NULL);
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    waitpid(child, NULL, 0);
    raise(SIGUSR1);
    printf("SIGUSR1 after a vfork child reset its own: handled %d times\n", (int)usr1s);
    return 0;
}
