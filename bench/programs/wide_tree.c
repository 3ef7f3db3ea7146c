/* wide_tree: one allocation at the end of each of PATHS (default
 * 1,000,000, at most 2^20) distinct whole call paths, so that make bench
 * can measure how the reducer and the reports scale with the number of
 * paths (issue 31).  Allocation i descends DEPTH (20) levels through left()
 * or right(), chosen by bit `level` of i, so no two allocations share a
 * path; every 64th block is never freed, to give the leak table rows too.
 *
 *     wide_tree [PATHS] */
#include <stdlib.h>

#define DEPTH 20

/* What left and right do besides recursing differs, and noipa keeps GCC
 * from merging, cloning or inlining them: each frame stays one of two
 * distinct functions, and each call site its own return address. */
static volatile unsigned long sink;

__attribute__((noipa)) static void *leaf(unsigned long i)
{
    void *block = malloc(16 + (i % 32) * 8);
    __asm__ volatile("" ::: "memory"); /* a frame of its own, not a jump to malloc */
    return block;
}

__attribute__((noipa)) static void *right(unsigned long i, int level);

__attribute__((noipa)) static void *left(unsigned long i, int level)
{
    sink += 1;
    void *block = level == DEPTH ? leaf(i) : (i >> level) & 1 ? right(i, level + 1) : left(i, level + 1);
    __asm__ volatile("" ::: "memory"); /* a call, not a jump */
    return block;
}

__attribute__((noipa)) static void *right(unsigned long i, int level)
{
    sink ^= 3;
    void *block = level == DEPTH ? leaf(i) : (i >> level) & 1 ? right(i, level + 1) : left(i, level + 1);
    __asm__ volatile("" ::: "memory");
    return block;
}

int main(int argc, char **argv)
{
    unsigned long paths = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    if (paths > 1UL << DEPTH)
        paths = 1UL << DEPTH;
    for (unsigned long i = 0; i < paths; i++) {
        /* Level 0 is entered from one site: bit 0 picks the first branch below it. */
        void *block = left(i, 0);
        if (i % 64)
            free(block);
    }
    return 0;
}
