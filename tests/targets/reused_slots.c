/* Allocations whose frames land where the previous allocation's frames
 * were, under other callers: the walk that reuses the last walk's upper
 * steps must see that a return-address slot now holds another caller.
 * Compiled with -O2 -fomit-frame-pointer.  main calls one of two twins
 * through one call instruction, so the twins' frames, and mid's and
 * leaf's below them, sit at the same stack addresses each time; only the
 * return-address slot of the twin's callee differs: mid's, one frame
 * above leaf's, for the near twins; upper's, two above, for the far ones.  Each twin allocates
 * its own size, and every block is kept: a chain taken from the previous
 * allocation would put one twin's bytes under the other's path.  A deep
 * recursion ends the run, walked past MPROF_DEPTH when the test sets it. */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;
/* Different stores keep the twins from being merged into one function. */
static volatile int marks[4];

NOINLINE static void *leaf(size_t size)
{
    void *block = malloc(size);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    return block;
}

NOINLINE static void *mid(size_t size)
{
    void *block = leaf(size);
    __asm__ volatile("" ::: "memory");
    return block;
}

NOINLINE static void *upper(size_t size)
{
    void *block = mid(size);
    __asm__ volatile("" ::: "memory");
    return block;
}

NOINLINE static void *near_a(void)
{
    marks[0] = 1;
    void *block = mid(101);
    __asm__ volatile("" ::: "memory");
    return block;
}

NOINLINE static void *near_b(void)
{
    marks[1] = 2;
    void *block = mid(102);
    __asm__ volatile("" ::: "memory");
    return block;
}

NOINLINE static void *far_a(void)
{
    marks[2] = 3;
    void *block = upper(103);
    __asm__ volatile("" ::: "memory");
    return block;
}

NOINLINE static void *far_b(void)
{
    marks[3] = 4;
    void *block = upper(104);
    __asm__ volatile("" ::: "memory");
    return block;
}

NOINLINE static void *recursive(unsigned remaining, size_t size)
{
    void *block = remaining ? recursive(remaining - 1, size) : mid(size);
    __asm__ volatile("" ::: "memory");
    return block;
}

int main(void)
{
    void *(*volatile twins[4])(void) = {near_a, near_b, far_a, far_b};
    /* a, b, a, a, b, b: each twin follows itself and the other. */
    static const unsigned order[] = {0, 1, 0, 0, 1, 1};
    for (unsigned pair = 0; pair < 2; pair++)
        for (unsigned round = 0; round < 100; round++)
            for (unsigned i = 0; i < sizeof order / sizeof order[0]; i++)
                sink = twins[2 * pair + order[i]]();
    /* Alternating depths: the deeper chain's outer frames are the
     * shallower one's, shifted. */
    for (unsigned round = 0; round < 50; round++) {
        sink = recursive(20, 201);
        sink = recursive(21, 202);
    }
    return 0;
}
