/* widgets in THREADS threads (default 2), COUNT widgets in all, each
 * thread with its own queue: the same work as one thread, split.  With
 * "handoff", each round's queue is freed by the next thread, not by the
 * one that filled it (by the same thread when it is alone), so every free
 * is of a block another thread allocated.
 *
 *     widgets_threads COUNT [THREADS [handoff]] */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE 10000
#define MAX_THREADS 64

typedef struct {
    int c;
    int data[50];
} widget;

static long per_thread;
static int threads;
static int handoff;
static widget **queues[MAX_THREADS];
static pthread_barrier_t filled, emptied;

__attribute__((noinline)) static widget *make_widget(void)
{
    return malloc(sizeof(widget));
}

static void *produce_and_consume(void *seed)
{
    long self = (long)seed;
    unsigned long long state = 0x2545F4914F6CDD1DULL ^ (unsigned long long)self;
    widget **queue = malloc(sizeof(widget *) * QUEUE);
    queues[self] = queue;
    widget **consumed = queue;
    for (long done = 0; done < per_thread; done += QUEUE) {
        for (int i = 0; i < QUEUE; i++) {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            queue[i] = make_widget();
            queue[i]->c = (int)((state * 0x2545F4914F6CDD1DULL) >> 63);
        }
        if (handoff) {
            pthread_barrier_wait(&filled);
            consumed = queues[(self + 1) % threads];
        }
        for (int i = 0; i < QUEUE; i++)
            if (consumed[i]->c)
                free(consumed[i]);
        if (handoff)
            pthread_barrier_wait(&emptied); /* before the queue is filled again */
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : 1000000;
    threads = argc > 2 ? atoi(argv[2]) : 2;
    handoff = argc > 3 && !strcmp(argv[3], "handoff");
    if (threads < 1 || threads > MAX_THREADS)
        return 2;
    per_thread = count / threads;
    pthread_barrier_init(&filled, NULL, (unsigned)threads);
    pthread_barrier_init(&emptied, NULL, (unsigned)threads);
    pthread_t ids[MAX_THREADS];
    for (long i = 0; i < threads; i++)
        pthread_create(&ids[i], NULL, produce_and_consume, (void *)i);
    for (long i = 0; i < threads; i++)
        pthread_join(ids[i], NULL);
    for (long i = 0; i < threads; i++)
        free(queues[i]);
    return 0;
}
