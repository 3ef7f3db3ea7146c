/* Test target for the leak scan (issue 49): a process under a seccomp
 * filter (one that allows everything: any filter makes /proc's Seccomp 2)
 * with THREADS threads asleep asks for a snapshot.  The filter could answer
 * the scan's clone or ptrace with a signal or with the process's end, so
 * the monitor stops no thread: each is counted as not stopped, its stack
 * read whole. */
#include <pthread.h>
#include <stdio.h>

#include "../../monitor/mprof.h"
#include "seccomp_filter.h"

#define THREADS 3

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int ready, finish;

static void *sleeper(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&lock);
    ready++;
    pthread_cond_broadcast(&changed);
    while (!finish)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void)
{
    struct sock_filter allow_all[] = {SECCOMP_LOAD_NUMBER, BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    if (seccomp_install(allow_all, sizeof allow_all / sizeof allow_all[0]) != 0) {
        perror("seccomp");
        return 1;
    }
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
