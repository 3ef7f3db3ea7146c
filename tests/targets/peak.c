/* Known figures at the peak, of leaks and of temporaries:
 *
 *     peak [threads]
 *
 * leak_outer > leak_middle > leak_inner keeps 1,000 blocks of 1,000 bytes
 * (1 MB) to the end; then hold() has 100 blocks of 1 MiB live at once (the
 * peak: 100 MiB + 1 MB) and frees them, the last allocated first, so that
 * one of them is a temporary; then churn() allocates 64 bytes and frees
 * them at once, 1,000,000 times: 1,000,000 temporaries, never more than
 * 64 bytes live.  With "threads" each part runs in a thread of its own,
 * one after the other, and the churn in four threads at once, 250,000
 * each. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LEAKED 1000
#define HELD 100
#define CHURNS 1000000

static void *leaked[LEAKED];

__attribute__((noinline)) static void leak_inner(int n) { leaked[n] = malloc(1000); }
__attribute__((noinline)) static void leak_middle(int n) { leak_inner(n); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) static void *leak_outer(void *unused)
{
    for (int n = 0; n < LEAKED; n++)
        leak_middle(n);
    __asm__ volatile("" ::: "memory");
    return unused;
}

__attribute__((noinline)) static void *hold(void *unused)
{
    void *held[HELD];
    for (int n = 0; n < HELD; n++)
        memset(held[n] = malloc(1 << 20), 1, 64);
    for (int n = HELD - 1; n >= 0; n--)
        free(held[n]);
    return unused;
}

__attribute__((noinline)) static void *churn(void *count)
{
    for (long n = 0; n < (long)count; n++) {
        void *volatile block = malloc(64);
        free(block);
    }
    return NULL;
}

static void in_thread(void *(*part)(void *), void *argument)
{
    pthread_t thread;
    if (pthread_create(&thread, NULL, part, argument) != 0 || pthread_join(thread, NULL) != 0)
        exit(1);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "threads") == 0) {
        in_thread(leak_outer, NULL);
        in_thread(hold, NULL);
        pthread_t churners[4];
        for (int n = 0; n < 4; n++)
            if (pthread_create(&churners[n], NULL, churn, (void *)(long)(CHURNS / 4)) != 0)
                return 1;
        for (int n = 0; n < 4; n++)
            pthread_join(churners[n], NULL);
    } else {
        leak_outer(NULL);
        hold(NULL);
        churn((void *)(long)CHURNS);
    }
    return 0;
}
