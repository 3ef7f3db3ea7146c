/* More (size, call site) pairs than the pointer map can number: 17 sites
 * each allocate every size from 1 to 65536 bytes, 1,114,112 kinds, so the
 * last site's blocks take the wide slots.  Of the blocks of sites 15 and
 * 16 whose size is a multiple of 4096 every other one is kept: 16 blocks,
 * 589,824 bytes; all else is freed. */
#include <stdlib.h>

#define SITE(n)                           \
    static void *site_##n(size_t size)    \
    {                                     \
        return malloc(size);              \
    }
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7) SITE(8)
SITE(9) SITE(10) SITE(11) SITE(12) SITE(13) SITE(14) SITE(15) SITE(16)

static void *(*const sites[])(size_t) = {site_0, site_1, site_2, site_3, site_4, site_5,
                                         site_6, site_7, site_8, site_9, site_10, site_11,
                                         site_12, site_13, site_14, site_15, site_16};

int main(void)
{
    void *candidates[32];
    unsigned count = 0;
    for (unsigned site = 0; site < 17; site++) {
        for (size_t size = 1; size <= 65536; size++) {
            void *block = sites[site](size);
            if (site >= 15 && size % 4096 == 0)
                candidates[count++] = block;
            else
                free(block);
        }
    }
    for (unsigned i = 0; i < count; i += 2)
        free(candidates[i]);
    return 0;
}
