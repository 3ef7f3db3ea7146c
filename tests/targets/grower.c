/* A program whose memory grows, for the live view: each step (about 20 a
 * second) keeps 8 blocks of 512 bytes under main > grow_cache > remember,
 * and makes and frees 200 blocks of 24 bytes under main > churn > scratch,
 * then appends "NS STEPS" to LOG (NS: CLOCK_MONOTONIC's nanoseconds after
 * the step), the truth a view is checked against.  Once the file STOP
 * exists it prints "grew STEPS steps" and exits with status 3.
 * Usage: grower LOG STOP */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEPT_PER_STEP 8
#define KEPT_SIZE 512
#define CHURNED_PER_STEP 200

static void *kept[1 << 20];
static size_t kept_count;

__attribute__((noinline)) static void *remember(size_t size)
{
    return malloc(size);
}

__attribute__((noinline)) static void grow_cache(void)
{
    for (int i = 0; i < KEPT_PER_STEP && kept_count < sizeof kept / sizeof *kept; i++)
        kept[kept_count++] = remember(KEPT_SIZE);
}

__attribute__((noinline)) static void *scratch(size_t size)
{
    return malloc(size);
}

__attribute__((noinline)) static void churn(void)
{
    for (int i = 0; i < CHURNED_PER_STEP; i++) {
        char *block = scratch(24);
        memset(block, i, 24);
        free(block);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    FILE *log = fopen(argv[1], "a");
    if (!log)
        return 2;
    setvbuf(log, NULL, _IONBF, 0);
    unsigned long steps = 0;
    while (access(argv[2], F_OK) != 0) {
        grow_cache();
        churn();
        steps++;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        fprintf(log, "%lld %lu\n", (long long)now.tv_sec * 1000000000 + now.tv_nsec, steps);
        usleep(50000);
    }
    printf("grew %lu steps\n", steps);
    return 3;
}
