/* THREADS threads, thread i allocating (i + 1) * 100 blocks of 16 * (i + 1) + 3
 * bytes and freeing all but i of them: the totals are known exactly (sizes
 * that libc's own blocks never have, so even the bins are), and every thread
 * starts at once to make the monitor's threads meet. */
#include <pthread.h>
#include <stdlib.h>

#define THREADS 8

static pthread_barrier_t start;

static void *work(void *argument)
{
    long index = (long)argument;
    long count = (index + 1) * 100;
    size_t size = 16 * (size_t)(index + 1) + 3;
    void **blocks = malloc(sizeof(void *) * (size_t)count);
    pthread_barrier_wait(&start);
    for (long i = 0; i < count; i++)
        blocks[i] = malloc(size);
    for (long i = index; i < count; i++)
        free(blocks[i]);
    free(blocks);
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (long i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, work, (void *)i);
    for (long i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    return 0;
}
