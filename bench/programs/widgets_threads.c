/* widgets in THREADS threads (default 2), COUNT widgets in all, each
 * thread with its own queue: the same work as one thread, split.  With
 * "handoff", each round's queue is freed by the next thread, not by the
 * one that filled it (by the same thread when it is alone), so every free
 * is of a block another thread allocated.  With "grow", the live memory
 * grows all along, as a server's does while it starts or leaks: every
 * other widget is kept, the others freed at once; at the end each thread
 * frees half of what it kept, then half of what the next one kept.
 *
 *     widgets_threads COUNT [THREADS [handoff|grow]] */
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
static int handoff, grow;
static widget **queues[MAX_THREADS];
static widget **kept[MAX_THREADS];
static pthread_barrier_t filled, emptied;

__attribute__((noinline)) static widget *make_widget(void)
{
    return malloc(sizeof(widget));
}

/* Keeps every other widget: the live memory grows at every second
 * allocation, in every thread at once. */
static void grow_and_free(long self)
{
    long count = per_thread / 2;
    widget **mine = malloc(sizeof(widget *) * (size_t)count);
    kept[self] = mine;
    for (long i = 0; i < count; i++) {
        mine[i] = make_widget();
        mine[i]->c = (int)i;
        widget *passing = make_widget();
        passing->c = mine[i]->c;
        free(passing);
    }
    pthread_barrier_wait(&filled);
    for (long i = 0; i < count / 2; i++)
        free(mine[i]);
    pthread_barrier_wait(&emptied);
    widget **next = kept[(self + 1) % threads];
    for (long i = count / 2; i < count; i++)
        free(next[i]);
}

static void *produce_and_consume(void *seed)
{
    long self = (long)seed;
    if (grow) {
        grow_and_free(self);
        return NULL;
    }
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
    grow = argc > 3 && !strcmp(argv[3], "grow");
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
    for (long i = 0; i < threads; i++) {
        free(queues[i]);
        free(kept[i]);
    }
    return 0;
}
