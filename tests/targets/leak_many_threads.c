/* Test target for the leak scan (issue 49): THREADS threads asleep while
 * main asks for a snapshot (mprof_dump), every one of them to be stopped
 * for the scan, or, under a tracer, each counted as not stopped; then they
 * end.  Each thread keeps one block of 100 bytes on its stack: still
 * reachable. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../monitor/mprof.h"

#define THREADS 100

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int ready, finish;

static void *sleeper(void *unused)
{
    (void)unused;
    char *volatile kept = malloc(100);
    memset(kept, 1, 100);
    pthread_mutex_lock(&lock);
    ready++;
    pthread_cond_broadcast(&changed);
    while (!finish)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    free(kept);
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, sleeper, NULL);
    pthread_mutex_lock(&lock);
    while (ready < THREADS)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    MPROF_DUMP();
    pthread_mutex_lock(&lock);
    finish = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    return 0;
}
