/* Keeps COUNT blocks of 24 bytes live at once, then frees them all, first
 * to last: enough live blocks to grow every shard of the monitor's pointer
 * map several times over, each block's free found after every growth.
 *
 *     many_live COUNT */
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    long count = atol(argv[1]);
    void **blocks = malloc((size_t)count * sizeof *blocks);
    if (!blocks)
        return 1;
    for (long i = 0; i < count; i++)
        if (!(blocks[i] = malloc(24)))
            return 1;
    for (long i = 0; i < count; i++)
        free(blocks[i]);
    free(blocks);
    return 0;
}
