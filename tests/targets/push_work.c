/* A fixed amount of allocation work, timed by the program itself: 300
 * rounds, each allocating 20,000 blocks of 16 to 1,040 bytes and freeing
 * them; prints the work's CLOCK_MONOTONIC time in ns and ends with status
 * 5, so that a test sees both kept whatever runs around it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 300
#define BLOCKS 20000

static long long monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000000000LL + now.tv_nsec;
}

__attribute__((noinline)) static void *make_block(size_t size)
{
    char *block = malloc(size);
    memset(block, 1, size);
    return block;
}

int main(void)
{
    static void *blocks[BLOCKS];
    long long start = monotonic_ns();
    for (int round = 0; round < ROUNDS; round++) {
        for (int n = 0; n < BLOCKS; n++)
            blocks[n] = make_block(16 + (size_t)(n * 7 + round) % 1025);
        for (int n = 0; n < BLOCKS; n++)
            free(blocks[n]);
    }
    printf("%lld\n", monotonic_ns() - start);
    return 5;
}
