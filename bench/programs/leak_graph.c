/* The leak scan's workload (bench/leak_scan.py): 1 GiB live in 10 million
 * blocks.  Ten lists of a million blocks each, of 80 to 136 bytes (108 on
 * average), each block holding a pointer to the next block of its list and
 * one to a block of the same list chosen at random, its other words
 * numbers below any heap address.  Nine lists are kept from a global
 * array; the tenth is dropped whole: lost, its lowest block definitely and
 * the rest indirectly (or two definitely, when a random link from the
 * rest reaches back before the head's clique reaches them: memcheck's
 * cliques go in address order). */
#include <stdint.h>
#include <stdlib.h>

#define LISTS 10

void **volatile heads[LISTS];

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : 10000000;
    long per_list = count / LISTS;
    void ***blocks = malloc((size_t)per_list * sizeof *blocks);
    if (!blocks)
        return 1;
    uint64_t seed = 88172645463325252ull;
    for (int list = 0; list < LISTS; list++) {
        for (long i = 0; i < per_list; i++) {
            size_t size = 80 + (size_t)(i % 8) * 8;
            uint64_t *block = malloc(size);
            if (!block)
                return 1;
            for (size_t word = 2; word < size / 8; word++)
                block[word] = word * 2654435761u;
            blocks[i] = (void **)block;
        }
        for (long i = 0; i < per_list; i++) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            blocks[i][0] = i + 1 < per_list ? blocks[i + 1] : NULL;
            blocks[i][1] = blocks[seed % (uint64_t)per_list];
        }
        heads[list] = list < LISTS - 1 ? (void **)blocks[0] : NULL;
    }
    free(blocks);
    return 0;
}
