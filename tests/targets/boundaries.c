/* Allocates at and around every size-class and bin boundary of mprof(5) a
 * known number of times, and frees all but one block of each size, so that
 * every figure of the bin, direct and call graph tables is known:
 *
 *   size      0   1  16  32  33 256 257 1024 1025 2048 2049 100000
 *   blocks    1   2   3   4   5   6   7    8    9   10   11     12
 *
 * main -> below_1025 (sizes up to 1024) and above_1024 (the rest), both
 * through allocate_each, which alone calls malloc. */
#include <stdlib.h>

static void *kept[12];

static void __attribute__((noinline)) allocate_each(size_t size, int blocks, int slot)
{
    for (int i = 0; i < blocks; i++) {
        void *block = malloc(size);
        if (i + 1 < blocks)
            free(block);
        else
            kept[slot] = block;
    }
}

static void __attribute__((noinline)) below_1025(void)
{
    static const size_t sizes[] = {0, 1, 16, 32, 33, 256, 257, 1024};
    for (int i = 0; i < 8; i++)
        allocate_each(sizes[i], i + 1, i);
}

static void __attribute__((noinline)) above_1024(void)
{
    static const size_t sizes[] = {1025, 2048, 2049, 100000};
    for (int i = 0; i < 4; i++)
        allocate_each(sizes[i], i + 9, i + 8);
}

int main(void)
{
    below_1025();
    above_1024();
    return kept[0] == NULL && kept[11] == NULL;
}
