/* Highs that several threads reach together, each of the live bytes and of
 * the live blocks at a moment of its own, after the threads have churned
 * near smaller highs, freed each other's blocks, and one of them has freed
 * much while the others wait:
 *
 *     peak_together
 *
 * Four threads each, in turn: churn() allocates 64 blocks of 100 bytes and
 * frees them, 2,000 times; a block of 1 MiB each (4 MiB live at once),
 * freed; swap() allocates 1,000 blocks of 16 bytes for the next thread to
 * free, which it does once all are made: the most live blocks, 4,000 of
 * them, with bytes far below their high; build() allocates 500 blocks of
 * 2,000 bytes.  Then the first thread frees its 500 while the others wait,
 * and the others grow() by 300 blocks of 2,000 bytes each: the peak of the
 * live bytes, 4.8 MB, is when the last of them is made, with 1,500 blocks
 * of build() and 900 of grow() live, nothing of the others'.  Then every
 * thread frees what it has. */
#include <pthread.h>
#include <stdlib.h>

#define THREADS 4
#define CHURNS 2000
#define CHURN_BLOCKS 64
#define SWAPPED 1000
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

__attribute__((noinline)) static void large(void)
{
    void *volatile block = malloc(1 << 20);
    pthread_barrier_wait(&together);
    free(block);
    pthread_barrier_wait(&together);
}

__attribute__((noinline)) static void swap(long me)
{
    for (int n = 0; n < SWAPPED; n++)
        swapped[me][n] = malloc(16);
    pthread_barrier_wait(&together);
    for (int n = 0; n < SWAPPED; n++)
        free(swapped[(me + 1) % THREADS][n]);
    pthread_barrier_wait(&together);
}

__attribute__((noinline)) static void build(void **blocks)
{
    for (int n = 0; n < BUILT; n++)
        blocks[n] = malloc(2000);
}

__attribute__((noinline)) static void grow(void **blocks)
{
    for (int n = 0; n < GROWN; n++)
        blocks[n] = malloc(2000);
}

static void *part(void *me)
{
    void *built[BUILT], *grown[GROWN];
    churn();
    large();
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
