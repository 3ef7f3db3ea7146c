/* 20,000 blocks of 64 KiB, each freed before the next: every one large
 * enough that the monitor's hot path may look for a viewer's request after
 * it, which it must do at most once a tenth of a second. */
#include <stdlib.h>
#include <string.h>

#define BLOCKS 20000
#define SIZE (64 << 10)

int main(void)
{
    for (int i = 0; i < BLOCKS; i++) {
        char *block = malloc(SIZE);
        if (!block)
            return 1;
        memset(block, i, 64);
        free(block);
    }
    return 0;
}
