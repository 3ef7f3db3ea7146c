/* Two pools, "even" and "odd", made one after the other, then 10 objects
 * announced alternately in them: object i, of (i + 1) * 8 bytes, in "even"
 * for even i and "odd" for odd i; objects 0 to 3 are freed, in the same
 * alternation.  even: 8 + 24 + 40 + 56 + 72 = 200 bytes in 5 objects, 168
 * kept; odd: 16 + 32 + 48 + 64 + 80 = 240 bytes in 5 objects, 192 kept. */
#include "mprof.h"

static char even[1024], odd[1024];

static char *object(int i)
{
    return (i % 2 ? odd : even) + 128 * (i / 2);
}

int main(void)
{
    MPROF_POOL_CREATE(even, "even");
    MPROF_POOL_CREATE(odd, "odd");
    for (int i = 0; i < 10; i++)
        MPROF_POOL_ALLOC(i % 2 ? odd : even, object(i), (size_t)(i + 1) * 8);
    for (int i = 0; i < 4; i++)
        MPROF_POOL_FREE(i % 2 ? odd : even, object(i));
    return 0;
}
