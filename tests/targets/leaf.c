/* Executed by forkexec: 40 blocks of 400 bytes, 4 kept. */
#include <stdlib.h>

int main(void)
{
    for (int i = 0; i < 40; i++) {
        void *block = malloc(400);
        if (i >= 4)
            free(block);
    }
    return 0;
}
