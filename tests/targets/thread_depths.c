/* One thread allocates 24 bytes three calls deep, then 40 bytes directly,
 * keeping both: the second chain is shorter than the first, and shorter
 * than the leak depth (5). */
#include <pthread.h>
#include <stdlib.h>

void *kept[2]; /* not static: the stores must stay */

__attribute__((noinline)) static void *inner(void) { return malloc(24); }
__attribute__((noinline)) static void *middle(void) { void *p = inner(); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) static void *outer(void) { void *p = middle(); __asm__ volatile("" ::: "memory"); return p; }

static void *worker(void *unused)
{
    (void)unused;
    kept[0] = outer();
    kept[1] = malloc(40);
    return NULL;
}

int main(void)
{
    pthread_t thread;
    if (pthread_create(&thread, NULL, worker, NULL) != 0)
        return 1;
    pthread_join(thread, NULL);
    return 0;
}
