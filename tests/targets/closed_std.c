/* Closes descriptors 0, 1 and 2, then allocates for half a second, as a
 * daemon might after detaching.  Writes nothing itself: run under strace,
 * any write to 0, 1 or 2 is the monitor's, and there must be none, though
 * the data file it opens for each checkpoint gets one of those numbers
 * from the kernel. */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
    close(0);
    close(1);
    close(2);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    static void *kept[4096];
    long blocks = 0;
    do {
        for (int i = 0; i < 10000; i++, blocks++) {
            free(kept[blocks % 4096]);
            kept[blocks % 4096] = malloc((size_t)(blocks % 5000));
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - start.tv_sec + (now.tv_nsec - start.tv_nsec) / 1e9 < 0.5);
    return 0;
}
