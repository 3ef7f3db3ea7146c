/* A peak that several threads reach together, after they have churned near
 * smaller highs, freed each other's blocks, and one of them has freed much
 * while the others wait:
 *
 *     peak_together
 *
 * Four threads each, in turn: churn() allocates 64 blocks of 100 bytes and
 * frees them, 2,000 times; swap() allocates 100 blocks of 200 bytes for the
 * next thread to free, which it does once all are made; build() allocates
 * 500 blocks of 1,000 bytes (a high of 2 MB in all).  Then the first thread
 * frees its 500 while the others wait, and the others grow() by 300 blocks
 * of 1,000 bytes each: the peak, 2.4 MB, is when the last of them is made,
 * with 1,500 blocks of build() and 900 of grow() live, nothing of churn()
 * or swap().  Then every thread frees what it has. */
#include <pthread.h>
#include <stdlib.h>

#define THREADS 4
#define CHURNS 2000
#define CHURN_BLOCKS 64
#define SWAPPED 100
#define BUILT 500
#define GROWN 300

static pthread_barrier_t together;
static void *swapped[THREADS][SWAPPED];

__attribute__((noinline)) static void churn(void)
{
    void *volatile blocks[CHURN_BLOCKS];
    for (int round = 0; round < CHURNS; round++) {
        for (int n = 0; n < CHURN_BLOCKS; n++)
            blocks[n] = malloc(100);
        for (int n = 0; n < CHURN_BLOCKS; n++)
            free(blocks[n]);
    }
}

__attribute__((noinline)) static void swap(long me)
{
    for (int n = 0; n < SWAPPED; n++)
        swapped[me][n] = malloc(200);
    pthread_barrier_wait(&together);
    for (int n = 0; n < SWAPPED; n++)
        free(swapped[(me + 1) % THREADS][n]);
    pthread_barrier_wait(&together);
}

__attribute__((noinline)) static void build(void **blocks)
{
    for (int n = 0; n < BUILT; n++)
        blocks[n] = malloc(1000);
}

__attribute__((noinline)) static void grow(void **blocks)
{
    for (int n = 0; n < GROWN; n++)
        blocks[n] = malloc(1000);
}

static void *part(void *me)
{
    void *built[BUILT], *grown[GROWN];
    churn();
    swap((long)me);
    build(built);
    pthread_barrier_wait(&together);
    if (me == 0)
        for (int n = 0; n < BUILT; n++)
            free(built[n]);
    pthread_barrier_wait(&together);
    if (me != 0)
        grow(grown);
    pthread_barrier_wait(&together);
    if (me != 0) {
        for (int n = 0; n < BUILT; n++)
            free(built[n]);
        for (int n = 0; n < GROWN; n++)
            free(grown[n]);
    }
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    if (pthread_barrier_init(&together, NULL, THREADS) != 0)
        return 1;
    for (long n = 0; n < THREADS; n++)
        if (pthread_create(&threads[n], NULL, part, (void *)n) != 0)
            return 1;
    for (int n = 0; n < THREADS; n++)
        pthread_join(threads[n], NULL);
    return 0;
}
