/* The monitor's own memory (monitor/arena.c, built in with it) through the
 * growths a table of the monitor's goes through: a region that cannot grow
 * where it is moves, grows in place next, then must move again.  The move
 * made it one mapping and the growth in place added another beside it (the
 * kernel does not join them: the moved one keeps its old page offset), so
 * the second move must carry both.  Every byte written must be there after
 * each growth.  Prints "kept 16384 bytes through 3 growths" and exits 0, or
 * says which growth lost what and exits 1. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"

static int check(const unsigned char *region, size_t size, const char *growth)
{
    if (!region) {
        printf("%s: no region\n", growth);
        return 0;
    }
    for (size_t i = 0; i < size; i++) {
        if (region[i] != (unsigned char)(i * 7 + 1)) {
            printf("%s: byte %zu lost\n", growth, i);
            return 0;
        }
    }
    return 1;
}

static void fill(unsigned char *region, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        region[i] = (unsigned char)(i * 7 + 1);
}

int main(void)
{
    size_t page = (size_t)getpagesize();
    unsigned char *table = region_map(page);
    fill(table, 0, page);
    /* A neighbour right after it: the first growth must move. */
    if (!region_map(page))
        return 1;
    unsigned char *moved = region_grow(table, page, 2 * page);
    if (!check(moved, page, "the move"))
        return 1;
    fill(moved, page, 2 * page);
    /* Moved to the end of what is in use: the next growth is in place. */
    unsigned char *grown = region_grow(moved, 2 * page, 4 * page);
    if (!check(grown, 2 * page, "the growth in place"))
        return 1;
    if (grown != moved)
        printf("the growth in place moved the region\n");
    fill(grown, 2 * page, 4 * page);
    /* Past the page the move left (which a region of a page would take):
     * right after it again. */
    if (!region_map(3 * page))
        return 1;
    unsigned char *again = region_grow(grown, 4 * page, 8 * page);
    if (!check(again, 4 * page, "the second move"))
        return 1;
    fill(again, 4 * page, 8 * page);
    if (!check(again, 8 * page, "the end"))
        return 1;
    printf("kept %zu bytes through 3 growths\n", 4 * page);
    return 0;
}
