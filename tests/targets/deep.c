/* Recursion DEPTH deep before each allocation, COUNT times. */
#include <stdlib.h>

static void *__attribute__((noinline)) descend(int depth)
{
    if (depth == 0)
        return malloc(16);
    void *block = descend(depth - 1);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    return block;
}

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 50;
    long count = argc > 2 ? atol(argv[2]) : 1000;
    for (long i = 0; i < count; i++)
        free(descend(depth));
    return 0;
}
