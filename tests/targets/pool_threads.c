/* Four threads take 25,000 objects of 32 bytes each from one pool, shared
 * under a mutex, and give back every other one of theirs; the main thread
 * resets the pool, then takes 3 objects it keeps. */
#include <pthread.h>
#include <stdlib.h>

#include "mprof.h"

#define THREADS 4
#define OBJECTS 25000

static struct {
    pthread_mutex_t lock;
    char *base;
    size_t used;
} pool = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

static void *pool_take(void)
{
    pthread_mutex_lock(&pool.lock);
    void *object = pool.base + pool.used;
    pool.used += 32;
    MPROF_POOL_ALLOC(&pool, object, 32);
    pthread_mutex_unlock(&pool.lock);
    return object;
}

static void pool_give(void *object)
{
    MPROF_POOL_FREE(&pool, object);
}

static void *worker(void *unused)
{
    (void)unused;
    static __thread void *mine[OBJECTS];
    for (int i = 0; i < OBJECTS; i++)
        mine[i] = pool_take();
    for (int i = 0; i < OBJECTS; i += 2)
        pool_give(mine[i]);
    return NULL;
}

int main(void)
{
    pool.base = MPROF_BACKING(malloc(THREADS * OBJECTS * 32 + 3 * 32));
    MPROF_POOL_CREATE(&pool, "shared pool");
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    MPROF_POOL_RESET(&pool);
    for (int i = 0; i < 3; i++)
        pool_take();
    return 0;
}
