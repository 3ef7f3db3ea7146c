/* The cases the report tables must order and round right, with round
 * figures: 100,000 bytes allocated in all.
 *
 *   twice         keeps 1,000 bytes from each of two call sites of
 *                 keep_block: one leak path, or two with --call-sites
 *   alpha, beta   10,000 bytes each, all freed: a tie, broken by name
 *   wrapper       calls worker, which allocates 76,001 bytes (76 blocks of
 *                 1,000, one of 1) and frees them: equal self+desc, so the
 *                 caller comes first
 *   one_percent   1,000 bytes, freed: exactly 1% of all bytes
 *   under_one     999 bytes, freed: under 1%, shown blank */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static void *kept[2];

NOINLINE static void *keep_block(void)
{
    return malloc(1000);
}

NOINLINE static void twice(void)
{
    kept[0] = keep_block();
    kept[1] = keep_block();
}

NOINLINE static void alpha(void)
{
    for (int i = 0; i < 10; i++)
        free(malloc(1000));
}

NOINLINE static void beta(void)
{
    for (int i = 0; i < 10; i++)
        free(malloc(1000));
}

NOINLINE static void worker(void)
{
    for (int i = 0; i < 76; i++)
        free(malloc(1000));
    free(malloc(1));
}

NOINLINE static void wrapper(void)
{
    worker();
    __asm__ volatile("" ::: "memory"); /* keeps the call a call */
}

NOINLINE static void one_percent(void)
{
    free(malloc(1000));
}

NOINLINE static void under_one(void)
{
    free(malloc(999));
}

int main(void)
{
    twice();
    beta();
    alpha();
    wrapper();
    under_one();
    one_percent();
    return kept[0] == NULL || kept[1] == NULL;
}
