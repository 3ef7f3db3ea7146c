/* A known sequence of allocation events for the trace's tests: every
 * function of the malloc family, a realloc that moves and one to 0, and a
 * thread that frees what the main thread allocated (and the reverse).
 * "threads" runs the thread part. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HANDED 1000
#define RETURNED 10

static void *handed[HANDED];
static void *returned[RETURNED];

static void *worker(void *unused)
{
    (void)unused;
    for (int i = 0; i < HANDED; i++)
        free(handed[i]);
    for (int i = 0; i < RETURNED; i++)
        returned[i] = malloc(48);
    return NULL;
}

int main(int argc, char **argv)
{
    char *grown = malloc(100);
    char *zeroed = calloc(4, 25);
    memset(grown, 1, 100);
    char *barrier = malloc(24); /* so that grown cannot grow in place */
    grown = realloc(grown, 4000);
    void *aligned;
    if (posix_memalign(&aligned, 64, 200) != 0)
        return 1;
    void *paged = aligned_alloc(4096, 8192);
    free(zeroed);
    grown = realloc(grown, 0);
    free(barrier);
    free(aligned);
    free(paged);
    char *kept = malloc(77);
    kept[0] = (char)(grown != NULL);
    if (argc > 1 && !strcmp(argv[1], "threads")) {
        for (int i = 0; i < HANDED; i++)
            handed[i] = malloc(16 + i % 100);
        pthread_t thread;
        if (pthread_create(&thread, NULL, worker, NULL) || pthread_join(thread, NULL))
            return 1;
        for (int i = 0; i < RETURNED; i++)
            free(returned[i]);
    }
    printf("%d\n", kept[0]);
    return 0;
}
