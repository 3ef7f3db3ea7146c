/* Pools of many names, each made twice by one call: N pools (argv[1],
 * 1,000 by default, at most 200,000), pool I named "q" and I in four
 * digits (more for I above 9,999), each made by make_pool and given one
 * object of 8 bytes, then each made again by make_pool under its name and
 * given a second object.  Pools of one name made by one call share a
 * frame, so the second round finds every frame the first made: N frames
 * however full the frames' index is where it looks, and however often it
 * grew in the first round. */
#include <stdio.h>
#include <stdlib.h>

#include "mprof.h"

#define MAX_POOLS 200000u

static char anchors[MAX_POOLS];
static char memory[MAX_POOLS][16];

static void make_pool(unsigned i, unsigned round)
{
    char name[16];
    snprintf(name, sizeof name, "q%04u", i);
    MPROF_POOL_CREATE(&anchors[i], name);
    MPROF_POOL_ALLOC(&anchors[i], memory[i] + 8 * round, 8);
}

int main(int argc, char **argv)
{
    unsigned pools = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1000u;
    if (pools > MAX_POOLS)
        return 2;
    for (unsigned round = 0; round < 2; round++)
        for (unsigned i = 0; i < pools; i++)
            make_pool(i, round);
    return 0;
}
