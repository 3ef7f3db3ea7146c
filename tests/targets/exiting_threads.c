/* Threads that allocate after the monitor has let go of their own
 * aggregates: the program's thread-specific data is destroyed after the
 * monitor's (its key was made later), so its destructor's blocks are
 * counted in the state that exiting threads share, by THREADS threads at
 * once (a barrier lines them up).  Even threads keep their blocks from a
 * chain two frames deeper than odd threads, each of its own size: a chain
 * walked by one thread and counted by another would put bytes under the
 * other path. */
#include <pthread.h>
#include <stdlib.h>

#define THREADS 8
#define BLOCKS 500
#define NOINLINE __attribute__((noinline))

static pthread_key_t key;
static pthread_barrier_t destroying;
static void *volatile kept[THREADS][BLOCKS]; /* volatile: the blocks are never read, and the calls must stay */

NOINLINE static void keep(long index, size_t size)
{
    for (int i = 0; i < BLOCKS; i++)
        kept[index][i] = malloc(size);
    __asm__ volatile("" ::: "memory"); /* no tail call */
}

NOINLINE static void deeper(long index)
{
    keep(index, 48);
    __asm__ volatile("" ::: "memory");
}

NOINLINE static void deep(long index)
{
    deeper(index);
    __asm__ volatile("" ::: "memory");
}

static void forget(void *value)
{
    long index = (long)value - 1;
    pthread_barrier_wait(&destroying);
    if (index % 2 == 0)
        deep(index);
    else
        keep(index, 24);
    __asm__ volatile("" ::: "memory");
}

static void *work(void *argument)
{
    /* The monitor's own data for the thread, destroyed first. */
    free(kept[(long)argument][0] = malloc(1));
    pthread_setspecific(key, (void *)((long)argument + 1));
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    pthread_key_create(&key, forget);
    pthread_barrier_init(&destroying, NULL, THREADS);
    for (long i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, work, (void *)i);
    for (long i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    return 0;
}
