/* The call path registry (monitor/paths.c) on its own, past its limit of
 * path ids, set small on the command line (PATH_ID_LIMIT): LIMIT + 10
 * paths, each one more address below the root, each asked for its id
 * twice.  Prints how many distinct ids they got, the highest, how many
 * paths share it, whether every path kept its id when asked again, and
 * whether the highest id names the node of the path that first got it. */
#include <stdint.h>
#include <stdio.h>

#include "hash.h"
#include "paths.h"

#define PATHS (PATH_ID_LIMIT + 10)

int main(void)
{
    static uint32_t ids[PATHS];
    static uint32_t nodes[PATHS];
    static unsigned char seen[PATHS];
    paths_init();
    uint32_t root = paths_root();
    int kept = 1;
    for (unsigned n = 0; n < PATHS; n++) {
        uintptr_t address = 0x400000 + 16 * (uintptr_t)n;
        nodes[n] = paths_node_id(root, address, fold_word(PATHS_FOLD_SEED, address), NULL);
        if (nodes[n] == PATH_NONE)
            return 1;
        ids[n] = paths_path_of_id(nodes[n]);
    }
    unsigned distinct = 0, sharing = 0;
    uint32_t highest = 0;
    unsigned first_with_highest = PATHS;
    for (unsigned n = 0; n < PATHS; n++) {
        if (ids[n] >= PATHS)
            return 1;
        kept &= paths_path_of_id(nodes[n]) == ids[n];
        distinct += !seen[ids[n]];
        seen[ids[n]] = 1;
        if (ids[n] > highest)
            highest = ids[n];
    }
    for (unsigned n = 0; n < PATHS; n++)
        if (ids[n] == highest) {
            sharing++;
            if (first_with_highest == PATHS)
                first_with_highest = n;
        }
    paths_hold(0);
    int owner = paths_held_node_of_path(highest) == nodes[first_with_highest];
    paths_release();
    printf("%u %u %u %d %d\n", distinct, highest, sharing, kept, owner);
    return 0;
}
