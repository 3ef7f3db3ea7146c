/* widgets in THREADS threads (default 2), COUNT widgets in all, each
 * thread with its own queue: the same work as one thread, split.
 *
 *     widgets_threads COUNT [THREADS] */
#include <pthread.h>
#include <stdlib.h>

typedef struct {
    int c;
    int data[50];
} widget;

static long per_thread;

__attribute__((noinline)) static widget *make_widget(void)
{
    return malloc(sizeof(widget));
}

static void *produce_and_consume(void *seed)
{
    unsigned long long state = 0x2545F4914F6CDD1DULL ^ (unsigned long long)(long)seed;
    widget **queue = malloc(sizeof(widget *) * 10000);
    for (long done = 0; done < per_thread; done += 10000) {
        for (int i = 0; i < 10000; i++) {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            queue[i] = make_widget();
            queue[i]->c = (int)((state * 0x2545F4914F6CDD1DULL) >> 63);
        }
        for (int i = 0; i < 10000; i++)
            if (queue[i]->c)
                free(queue[i]);
    }
    free(queue);
    return NULL;
}

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : 1000000;
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    per_thread = count / threads;
    pthread_t ids[64];
    for (long i = 0; i < threads && i < 64; i++)
        pthread_create(&ids[i], NULL, produce_and_consume, (void *)i);
    for (long i = 0; i < threads && i < 64; i++)
        pthread_join(ids[i], NULL);
    return 0;
}
