/* The peak of threads that grow at once, and changes that the program
 * itself puts in order across threads while the live bytes are at their
 * high (the monitor's logs, live.h):
 *
 *     peak_growing
 *
 * Two threads grow together: each keeps every other block it allocates
 * (grow_a(): 50,000 blocks of 100 bytes; grow_b(): 50,000 of 200 bytes)
 * and frees the others at once, so that nearly every allocation is a new
 * high.  Then the first allocates 10 MiB (big_a()): the peak.  Then the two
 * take turns, each waking the other: the first frees one of its 100-byte
 * blocks, then the second allocates 99 bytes (handoff_b()), 1,000 times,
 * the live bytes a byte lower each round; the first frees its 10 MiB, then
 * the second allocates 10 MiB less a byte (late_b()).  In the order the
 * program puts them in, none of handoff_b()'s or late_b()'s blocks is live
 * at the peak; in another order (the second's allocation before the free
 * that let it happen) one would be, and the peak higher.
 *
 *     peak_growing abort
 *
 * ends the process with abort() right after big_a(), the changes of the
 * growth still in the threads' logs: the final file, written from the
 * monitor's handler, must hold them at the peak all the same. */
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>

#define KEPT 50000
#define HANDOFFS 1000
#define BIG (10u << 20)

static pthread_barrier_t grown;
static int aborting;
static sem_t first_done, second_done;
static void *volatile kept_a[KEPT], *volatile kept_b[KEPT];

__attribute__((noinline)) static void *grow_a(void)
{
    return malloc(100);
}

__attribute__((noinline)) static void *grow_b(void)
{
    return malloc(200);
}

__attribute__((noinline)) static void *passing(size_t size)
{
    return malloc(size);
}

__attribute__((noinline)) static void *big_a(void)
{
    return malloc(BIG);
}

__attribute__((noinline)) static void *handoff_b(void)
{
    return malloc(99);
}

__attribute__((noinline)) static void *late_b(void)
{
    return malloc(BIG - 1);
}

static void *first(void *unused)
{
    (void)unused;
    for (int i = 0; i < KEPT; i++) {
        kept_a[i] = grow_a();
        free(passing(100));
    }
    pthread_barrier_wait(&grown);
    void *big = big_a();
    if (aborting)
        abort();
    pthread_barrier_wait(&grown);
    for (int i = 0; i < HANDOFFS; i++) {
        free(kept_a[i]);
        sem_post(&first_done);
        sem_wait(&second_done);
    }
    free(big);
    sem_post(&first_done);
    return NULL;
}

static void *second(void *unused)
{
    (void)unused;
    for (int i = 0; i < KEPT; i++) {
        kept_b[i] = grow_b();
        free(passing(200));
    }
    pthread_barrier_wait(&grown);
    pthread_barrier_wait(&grown);
    void *handed[HANDOFFS];
    for (int i = 0; i < HANDOFFS; i++) {
        sem_wait(&first_done);
        handed[i] = handoff_b();
        sem_post(&second_done);
    }
    sem_wait(&first_done);
    free(late_b());
    for (int i = 0; i < HANDOFFS; i++)
        free(handed[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    aborting = argc > 1 && argv[1][0] == 'a';
    pthread_barrier_init(&grown, NULL, 2);
    sem_init(&first_done, 0, 0);
    sem_init(&second_done, 0, 0);
    pthread_t threads[2];
    pthread_create(&threads[0], NULL, first, NULL);
    pthread_create(&threads[1], NULL, second, NULL);
    pthread_join(threads[0], NULL);
    pthread_join(threads[1], NULL);
    for (int i = HANDOFFS; i < KEPT; i++)
        free(kept_a[i]);
    for (int i = 0; i < KEPT; i++)
        free(kept_b[i]);
    return 0;
}
