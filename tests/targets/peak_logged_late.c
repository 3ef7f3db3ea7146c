/* A peak whose figures depend on the order the threads' logs are merged in
 * (monitor/live.h):
 *
 *     peak_logged_late
 *
 * main() allocates 10 blocks of 100,000 bytes and frees them: highs that
 * glibc's allocations for the threads stay under.  Then it makes the first
 * thread, which allocates and frees a block of 16 bytes before main makes
 * the second, so that the first's state is the older.  The threads take
 * turns, each waiting at a barrier for the other: the second allocates a
 * block of 2 MB in high() and frees it, a high of its own; the first's
 * rise() makes 100 blocks of 100,000 bytes, each a new high, the first
 * past 2 MB a high after another thread's, so that from then on the
 * threads log their changes; the first frees them all; then the second
 * allocates a block of 5 MB in late() and frees it.  Both then wait for
 * the end, so that the logs are merged once, by the final data file's
 * writer, the first's log (the older state's) starting before the
 * second's.  The peak is rise()'s last block: 10,000,000 bytes in 100
 * blocks, late()'s block coming after rise()'s were freed. */
#include <pthread.h>
#include <stdlib.h>

#define READY 10
#define READY_BYTES 100000
#define RISEN 100
#define RISEN_BYTES 100000

static pthread_barrier_t turn, started, end;
static void *risen[RISEN];

__attribute__((noinline)) static void block_of(size_t size)
{
    void *volatile block = malloc(size);
    free(block);
}

__attribute__((noinline)) static void high(void)
{
    block_of(2000000);
}

__attribute__((noinline)) static void late(void)
{
    block_of(5000000);
}

__attribute__((noinline)) static void rise(void)
{
    for (int n = 0; n < RISEN; n++)
        risen[n] = malloc(RISEN_BYTES);
}

__attribute__((noinline)) static void ready(void)
{
    void *volatile blocks[READY];
    for (int n = 0; n < READY; n++)
        blocks[n] = malloc(READY_BYTES);
    for (int n = 0; n < READY; n++)
        free(blocks[n]);
}

/* Kept waiting until the process ends, so that the threads' states and
 * logs stand as they were when main() returns. */
static void wait_for_the_end(void)
{
    pthread_barrier_wait(&end);
    pthread_barrier_wait(&end);
}

static void *first(void *unused)
{
    (void)unused;
    block_of(16);
    pthread_barrier_wait(&started);
    pthread_barrier_wait(&turn); /* the second's high */
    rise();
    for (int n = 0; n < RISEN; n++)
        free(risen[n]);
    pthread_barrier_wait(&turn);
    wait_for_the_end();
    return NULL;
}

static void *second(void *unused)
{
    (void)unused;
    high();
    pthread_barrier_wait(&turn);
    pthread_barrier_wait(&turn); /* the first rises and frees */
    late();
    wait_for_the_end();
    return NULL;
}

int main(void)
{
    ready();
    pthread_t threads[2];
    if (pthread_barrier_init(&turn, NULL, 2) != 0 || pthread_barrier_init(&started, NULL, 2) != 0 ||
        pthread_barrier_init(&end, NULL, 3) != 0)
        return 1;
    if (pthread_create(&threads[0], NULL, first, NULL) != 0)
        return 1;
    pthread_barrier_wait(&started);
    if (pthread_create(&threads[1], NULL, second, NULL) != 0)
        return 1;
    pthread_barrier_wait(&end);
    return 0;
}
