/* One function, w, with two callers that allocate very different amounts
 * through it: from a, w calls x, which allocates 1,000 blocks of 100 bytes;
 * from b, w calls y, which allocates 10 blocks of 5,000 bytes.  The pairs
 * w -> x and w -> y alone cannot say which caller of w each came through. */
#include <stdlib.h>

static void *blocks[1010];
static int used;

__attribute__((noinline)) static void x(void) { blocks[used++] = malloc(100); }
__attribute__((noinline)) static void y(void) { blocks[used++] = malloc(5000); }

__attribute__((noinline)) static void w(int from_a)
{
    if (from_a)
        x();
    else
        y();
    __asm__ volatile("" ::: "memory"); /* keeps the calls calls, not jumps */
}

__attribute__((noinline)) static void a(void)
{
    for (int i = 0; i < 1000; i++)
        w(1);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void b(void)
{
    for (int i = 0; i < 10; i++)
        w(0);
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    a();
    b();
    for (int i = 0; i < used; i++)
        free(blocks[i]);
    return 0;
}
