/* Test target for the leak scan (issue 49): COUNT threads (argv[1], 100 by
 * default) asleep while main asks for a snapshot (mprof_dump), every one
 * of them to be stopped for the scan, or, under a tracer, each counted as
 * not stopped; then they end.  Each thread keeps one block of 100 bytes on
 * its stack: still reachable.
 * With "filtered" (argv[2]) the process first puts itself under a seccomp
 * filter (one that allows everything: any filter makes /proc's Seccomp 2),
 * which could answer the scan's clone or ptrace with a signal or with the
 * process's end: the monitor then stops no thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../monitor/mprof.h"
#include "seccomp_filter.h"

#define THREADS_MAX 1000

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

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 100;
    if (count < 1 || count > THREADS_MAX)
        return 2;
    if (argc > 2 && !strcmp(argv[2], "filtered")) {
        struct sock_filter allow_all[] = {SECCOMP_LOAD_NUMBER, BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
        if (seccomp_install(allow_all, sizeof allow_all / sizeof allow_all[0]) != 0) {
            perror("seccomp");
            return 1;
        }
    }
    static pthread_t threads[THREADS_MAX];
    for (int i = 0; i < count; i++)
        pthread_create(&threads[i], NULL, sleeper, NULL);
    pthread_mutex_lock(&lock);
    while (ready < count)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    MPROF_DUMP();
    pthread_mutex_lock(&lock);
    finish = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < count; i++)
        pthread_join(threads[i], NULL);
    return 0;
}
