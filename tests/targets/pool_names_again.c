/* Pools of many names, each made twice by one call: 1,000 pools, pool I
 * named "q" and I in four digits, each made by make_pool and given one
 * object of 8 bytes, then each made again by make_pool under its name and
 * given a second object.  Pools of one name made by one call share a
 * frame, so the second round finds every frame the first made: 1,000
 * frames however full the frames' index is where it looks. */
#include <stdio.h>

#include "mprof.h"

#define POOLS 1000u

static char anchors[POOLS];
static char memory[POOLS][16];

static void make_pool(unsigned i, unsigned round)
{
    char name[16];
    snprintf(name, sizeof name, "q%04u", i);
    MPROF_POOL_CREATE(&anchors[i], name);
    MPROF_POOL_ALLOC(&anchors[i], memory[i] + 8 * round, 8);
}

int main(void)
{
    for (unsigned round = 0; round < 2; round++)
        for (unsigned i = 0; i < POOLS; i++)
            make_pool(i, round);
    return 0;
}
