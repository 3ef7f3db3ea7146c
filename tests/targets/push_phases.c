/* A service whose memory the test pushes to a profiling server: a thread
 * beats, allocating and freeing a small block every 2 ms (a server's steady
 * work, which keeps the monitor looking at its clock), while main takes
 * commands on stdin, one phase each, and answers each with the phase's
 * CLOCK_REALTIME start and end in ns:
 *   grow N SIZE  keeps N blocks of SIZE bytes, allocated in grow_cache;
 *   drop N       frees the N oldest blocks kept;
 *   temp N SIZE  makes N temporaries of SIZE bytes in make_temporaries:
 *                each block freed before the next is allocated;
 *   quit         ends the process with status 7, the blocks still kept.
 * With the argument "idle" there is no heartbeat: it allocates only in the
 * phases. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MOST_KEPT 100000

static void *kept[MOST_KEPT];
static int first_kept, kept_count;
static atomic_bool quitting;

static long long realtime_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec * 1000000000LL + now.tv_nsec;
}

__attribute__((noinline)) static void grow_cache(int count, size_t size)
{
    for (int n = 0; n < count && kept_count < MOST_KEPT; n++) {
        kept[kept_count] = malloc(size);
        memset(kept[kept_count++], 0x5a, size);
    }
}

__attribute__((noinline)) static void make_temporaries(int count, size_t size)
{
    for (int n = 0; n < count; n++) {
        /* volatile: a block that is never used may be no call at all. */
        char *volatile block = malloc(size);
        block[0] = 1;
        free(block);
    }
}

__attribute__((noinline)) static void heartbeat(void)
{
    char *volatile beat = malloc(32);
    beat[0] = 1;
    free(beat);
}

static void *beating(void *unused)
{
    (void)unused;
    struct timespec pause = {0, 2000000};
    while (!atomic_load(&quitting)) {
        heartbeat();
        nanosleep(&pause, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    bool beats = !(argc > 1 && strcmp(argv[1], "idle") == 0);
    pthread_t beater;
    if (beats)
        pthread_create(&beater, NULL, beating, NULL);
    char line[128];
    while (fgets(line, sizeof line, stdin)) {
        int count;
        size_t size;
        long long start = realtime_ns();
        if (sscanf(line, "grow %d %zu", &count, &size) == 2) {
            grow_cache(count, size);
        } else if (sscanf(line, "temp %d %zu", &count, &size) == 2) {
            make_temporaries(count, size);
        } else if (sscanf(line, "drop %d", &count) == 1) {
            for (; count > 0 && first_kept < kept_count; count--)
                free(kept[first_kept++]);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
        printf("%lld %lld\n", start, realtime_ns());
        fflush(stdout);
    }
    atomic_store(&quitting, true);
    if (beats)
        pthread_join(beater, NULL);
    return 7;
}
