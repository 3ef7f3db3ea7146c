/* A peak set by one thread, which allocates again before it frees: the
 * peak's allocation count and each path's figures at the peak, exact with
 * threads in lock step:
 *
 *     peak_lockstep [logged]
 *
 * Before the threads, main() allocates 10 blocks of 100,000 bytes and
 * frees them: highs of the live bytes and blocks that glibc's allocations
 * for the threads stay under, so that the first thread's growth is the
 * first high the threads reach, through the ledger (monitor/live.h).  Two
 * threads take turns, each waiting at a barrier for the other.  With
 * logged, the second first allocates a block of 2 MB and frees it: a high
 * of another thread's, which the first's growth then passes, so that the
 * threads log their changes.  The first grows: 100 blocks of 100,000
 * bytes, in rise(), each a new high, the last the peak.  The second frees
 * 20 of them.  The first allocates 10 blocks of 50,000 bytes in again(),
 * below the high: its next change after the peak, an allocation.  Then it
 * frees everything.  Nothing else allocates once the threads are made, so
 * the peak is the 100th allocation after that (the 101st with logged), and
 * again() holds nothing at it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define READY 10
#define READY_BYTES 100000
#define RISEN 100
#define RISEN_BYTES 100000
#define TAKEN 20
#define AGAIN 10
#define AGAIN_BYTES 50000

static pthread_barrier_t turn;
static void *risen[RISEN];
static void *again_blocks[AGAIN];
static int logged;

__attribute__((noinline)) static void high(void)
{
    void *volatile block = malloc(2000000);
    free(block);
}

__attribute__((noinline)) static void rise(void)
{
    for (int n = 0; n < RISEN; n++)
        risen[n] = malloc(RISEN_BYTES);
}

__attribute__((noinline)) static void take(void)
{
    for (int n = 0; n < TAKEN; n++)
        free(risen[n]);
}

__attribute__((noinline)) static void again(void)
{
    for (int n = 0; n < AGAIN; n++)
        again_blocks[n] = malloc(AGAIN_BYTES);
}

__attribute__((noinline)) static void ready(void)
{
    void *volatile blocks[READY];
    for (int n = 0; n < READY; n++)
        blocks[n] = malloc(READY_BYTES);
    for (int n = 0; n < READY; n++)
        free(blocks[n]);
}

static void *first(void *unused)
{
    (void)unused;
    pthread_barrier_wait(&turn); /* the second's high */
    rise();
    pthread_barrier_wait(&turn);
    pthread_barrier_wait(&turn); /* the second takes */
    again();
    for (int n = TAKEN; n < RISEN; n++)
        free(risen[n]);
    for (int n = 0; n < AGAIN; n++)
        free(again_blocks[n]);
    return NULL;
}

static void *second(void *unused)
{
    (void)unused;
    if (logged)
        high();
    pthread_barrier_wait(&turn);
    pthread_barrier_wait(&turn); /* the first rises */
    take();
    pthread_barrier_wait(&turn);
    return NULL;
}

int main(int argc, char **argv)
{
    logged = argc > 1 && strcmp(argv[1], "logged") == 0;
    ready();
    pthread_t threads[2];
    if (pthread_barrier_init(&turn, NULL, 2) != 0)
        return 1;
    if (pthread_create(&threads[0], NULL, first, NULL) != 0 || pthread_create(&threads[1], NULL, second, NULL) != 0)
        return 1;
    pthread_join(threads[0], NULL);
    pthread_join(threads[1], NULL);
    return 0;
}
