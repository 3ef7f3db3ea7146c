/* A program that takes real-time signals the way servers and daemons do,
 * for the tests of mprof-inject and mprof attach (test_attach.py):
 * - SIGRTMIN, queued by rt_sender with sigqueue: the values 1, 2, 3... in
 *   order, each with the code SI_QUEUE;
 * - SIGRTMIN+1 from a POSIX timer every 200 microseconds, whose handler
 *   follows sigev_value.sival_ptr to its ticker, as a timer's dispatch
 *   does (one that came without it would crash the program), on an
 *   alternate signal stack.
 * Its only thread blocks SIGUSR1, rounds toward zero with denormals
 * flushed (MXCSR), and waits reading stdin a line at a time:
 *   "count"  answers "queued N wrong W timer-wrong T": N signals came in
 *            order with their code, W did not, T timer signals came
 *            without the timer's code;
 *   "ticks"  answers "ticks K", the timer's signals so far;
 *   "state"  answers "blocked 10 altstack ok mxcsr ok" while its mask,
 *            alternate stack and MXCSR are as it set them;
 *   "hold F" answers "holding" once a thread of its own, every signal
 *            blocked, holds the dynamic loader's lock (inside
 *            dl_iterate_phdr) until a byte comes on descriptor F:
 *            a library mprof-inject loads meanwhile waits for it, so a
 *            test's signals surely come while mprof-inject works. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xmmintrin.h>

struct ticker {
    volatile sig_atomic_t ticks;
};

static volatile sig_atomic_t next_value = 1, wrong, timer_wrong;
static struct ticker ticker;
static char alternate[1 << 16];
/* Round toward zero (0x6000), flush to zero (0x8000), denormals are zero (0x40). */
static const unsigned own_mxcsr = 0x1f80 | 0x6000 | 0x8000 | 0x40;

static void queued(int number, siginfo_t *info, void *context)
{
    (void)number, (void)context;
    if (info->si_code == SI_QUEUE && info->si_value.sival_int == next_value)
        next_value++;
    else
        wrong++;
}

static void tick(int number, siginfo_t *info, void *context)
{
    (void)number, (void)context;
    if (info->si_code != SI_TIMER)
        timer_wrong++;
    struct ticker *owner = info->si_value.sival_ptr;
    owner->ticks++;
}

static const char *state(void)
{
    static char text[128];
    sigset_t blocked;
    stack_t stack;
    sigprocmask(SIG_BLOCK, NULL, &blocked);
    int count = 0, which = 0;
    for (int number = 1; number < SIGRTMIN; number++)
        if (sigismember(&blocked, number))
            count++, which = number;
    sigaltstack(NULL, &stack);
    int altstack = stack.ss_sp == alternate && stack.ss_size == sizeof alternate && !(stack.ss_flags & SS_DISABLE);
    snprintf(text, sizeof text, "blocked %d altstack %s mxcsr %s", count == 1 ? which : -count,
             altstack ? "ok" : "changed", _mm_getcsr() == own_mxcsr ? "ok" : "changed");
    return text;
}

struct hold {
    sem_t holding;
    int release;
};

static int hold_until_released(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info, (void)size;
    struct hold *hold = data;
    sem_post(&hold->holding);
    /* It must not wait in read, where mprof-inject would take it for its
     * calls and be let into the lock it holds: it looks at the pipe between
     * waits on a futex, which mprof-inject leaves alone. */
    sem_t never;
    sem_init(&never, 0, 0);
    char byte;
    while (read(hold->release, &byte, 1) != 1) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 1000000;
        if (until.tv_nsec >= 1000000000)
            until.tv_sec++, until.tv_nsec -= 1000000000;
        sem_timedwait(&never, &until);
    }
    return 1;
}

static void *holder(void *data)
{
    dl_iterate_phdr(hold_until_released, data);
    return NULL;
}

static const char *hold_loader(int release)
{
    static struct hold hold;
    hold.release = release;
    if (fcntl(release, F_SETFL, O_NONBLOCK) != 0)
        return "failed";
    sigset_t every, own;
    sigfillset(&every);
    pthread_t thread;
    if (sem_init(&hold.holding, 0, 0) != 0 || pthread_sigmask(SIG_SETMASK, &every, &own) != 0)
        return "failed";
    int made = pthread_create(&thread, NULL, holder, &hold);
    pthread_sigmask(SIG_SETMASK, &own, NULL);
    if (made != 0 || pthread_detach(thread) != 0)
        return "failed";
    while (sem_wait(&hold.holding) != 0)
        ;
    return "holding";
}

int main(void)
{
    _mm_setcsr(own_mxcsr);
    sigset_t user1;
    sigemptyset(&user1);
    sigaddset(&user1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &user1, NULL);
    stack_t stack = {.ss_sp = alternate, .ss_size = sizeof alternate};
    struct sigaction on_queued = {.sa_sigaction = queued, .sa_flags = SA_SIGINFO | SA_RESTART};
    struct sigaction on_tick = {.sa_sigaction = tick, .sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK};
    sigemptyset(&on_queued.sa_mask);
    sigemptyset(&on_tick.sa_mask);
    struct sigevent event = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN + 1,
                             .sigev_value.sival_ptr = &ticker};
    timer_t timer;
    struct itimerspec every = {{0, 200000}, {0, 200000}};
    if (sigaltstack(&stack, NULL) != 0 || sigaction(SIGRTMIN, &on_queued, NULL) != 0 ||
        sigaction(SIGRTMIN + 1, &on_tick, NULL) != 0 || timer_create(CLOCK_MONOTONIC, &event, &timer) != 0 ||
        timer_settime(timer, 0, &every, NULL) != 0)
        return 1;
    printf("ready\n");
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (!strcmp(line, "count\n"))
            printf("queued %d wrong %d timer-wrong %d\n", (int)next_value - 1, (int)wrong, (int)timer_wrong);
        else if (!strcmp(line, "ticks\n"))
            printf("ticks %d\n", (int)ticker.ticks);
        else if (!strcmp(line, "state\n"))
            printf("%s\n", state());
        else if (!strncmp(line, "hold ", 5))
            printf("%s\n", hold_loader(atoi(line + 5)));
        else
            printf("?\n");
        fflush(stdout);
    }
    return 0;
}
