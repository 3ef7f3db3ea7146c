/* The monitor under stress, each mode with figures known by construction:
 *
 *   threads     16 threads each allocate 2,000 blocks of 16*(t+1) bytes in
 *               made(); then each frees the blocks of the next thread
 *   fork        4 threads allocate and free 50,000 blocks each in churned()
 *               while main forks 20 children; each child allocates 10
 *               blocks of 1,111 bytes in child_work(), frees 9, and exits
 *   signals     4 threads allocate and free 50,000 blocks each in churned()
 *               while a 100 us timer's handler allocates and frees 24 bytes
 *               (it prints how many times it ran)
 *   exit        3 threads churn without end; a fourth allocates 50 blocks of
 *               4,242 bytes in exiting() and calls exit() while they run
 *   longjmp     50 times, descends 100 levels allocating 48 bytes a level in
 *               descend(), and longjmps out from the bottom; then frees all
 *   dlopen P Q  200 times loads P or Q by turns, keeps a block P or Q
 *               allocates (100 or 200 bytes), and unloads it
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

enum { THREADS = 16, BLOCKS = 2000, CHURNERS = 4, CHURN = 50000 };

static void *blocks[THREADS][BLOCKS];
static pthread_barrier_t barrier;

NOINLINE static void *made(size_t size)
{
    return malloc(size);
}

static void *allocate_then_free_the_next(void *argument)
{
    long t = (long)argument;
    for (int i = 0; i < BLOCKS; i++)
        blocks[t][i] = made(16 * (size_t)(t + 1));
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < BLOCKS; i++)
        free(blocks[(t + 1) % THREADS][i]);
    return NULL;
}

NOINLINE static void *churned(size_t size)
{
    return malloc(size);
}

static atomic_bool stop;

static void *churn(void *argument)
{
    long forever = (long)argument;
    for (long i = 0; forever ? !atomic_load(&stop) : i < CHURN; i++)
        free(churned(8 + (size_t)(i % 64)));
    return NULL;
}

NOINLINE static void child_work(void)
{
    void *kept[10];
    for (int i = 0; i < 10; i++)
        kept[i] = malloc(1111);
    for (int i = 1; i < 10; i++)
        free(kept[i]);
}

static void start_churners(pthread_t *threads, int count, long forever)
{
    for (long t = 0; t < count; t++)
        pthread_create(&threads[t], NULL, churn, (void *)forever);
}

static volatile sig_atomic_t handled;

static void on_alarm(int signal_number)
{
    (void)signal_number;
    free(malloc(24));
    handled++;
}

NOINLINE static void *exiting(void *unused)
{
    (void)unused;
    for (int i = 0; i < 50; i++)
        if (!malloc(4242))
            abort();
    usleep(20000); /* the churners are well under way */
    exit(0);
}

static jmp_buf bottom;
static void *levels[50 * 100];
static int level_count;

NOINLINE static void descend(int depth)
{
    levels[level_count++] = malloc(48);
    if (depth == 1)
        longjmp(bottom, 1);
    descend(depth - 1);
    __asm__ volatile("" ::: "memory"); /* no tail call */
}

static int loop_plugins(const char *first, const char *second)
{
    for (int i = 0; i < 200; i++) {
        void *plugin = dlopen(i % 2 ? second : first, RTLD_NOW);
        if (!plugin)
            return 3;
        void *(*allocate)(size_t) = (void *(*)(size_t))dlsym(plugin, "plugin_allocate");
        if (!allocate(i % 2 ? 200 : 100) || dlclose(plugin))
            return 4;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    pthread_t threads[THREADS];
    if (!strcmp(mode, "threads")) {
        pthread_barrier_init(&barrier, NULL, THREADS);
        for (long t = 0; t < THREADS; t++)
            pthread_create(&threads[t], NULL, allocate_then_free_the_next, (void *)t);
        for (int t = 0; t < THREADS; t++)
            pthread_join(threads[t], NULL);
    } else if (!strcmp(mode, "fork")) {
        start_churners(threads, CHURNERS, 0);
        for (int i = 0; i < 20; i++) {
            pid_t child = fork();
            if (child == 0) {
                child_work();
                exit(0);
            }
            int status;
            if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
                return 5;
        }
        for (int t = 0; t < CHURNERS; t++)
            pthread_join(threads[t], NULL);
    } else if (!strcmp(mode, "signals")) {
        struct sigaction action = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
        sigemptyset(&action.sa_mask);
        sigaction(SIGALRM, &action, NULL);
        struct itimerval every = {{0, 100}, {0, 100}}, off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &every, NULL);
        start_churners(threads, CHURNERS, 0);
        for (int t = 0; t < CHURNERS; t++)
            pthread_join(threads[t], NULL);
        setitimer(ITIMER_REAL, &off, NULL);
        printf("handled %d\n", (int)handled);
    } else if (!strcmp(mode, "exit")) {
        start_churners(threads, 3, 1);
        pthread_create(&threads[3], NULL, exiting, NULL);
        pthread_join(threads[3], NULL); /* never returns: exit() ends the process */
    } else if (!strcmp(mode, "longjmp")) {
        for (int round = 0; round < 50; round++)
            if (!setjmp(bottom))
                descend(100);
        for (int i = 0; i < level_count; i++)
            free(levels[i]);
    } else if (!strcmp(mode, "dlopen") && argc > 3) {
        return loop_plugins(argv[2], argv[3]);
    } else {
        return 2;
    }
    return 0;
}
