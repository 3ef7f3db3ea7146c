/* Pools of many names, as a server names an arena after each request: N
 * pools (argv[1], 70,000 by default, at most 200,000), each created by
 * make_pool with a name of its own, "p" and its number I in six digits.
 * fill gives pool I (I % 3) + 1 objects of (I % 5 + 1) * 8 bytes; the pools
 * of even I are destroyed, their objects freed with them, and those of odd
 * I are kept to the end, never freed.  Then the pools of even I below 20
 * are made again by make_pool, under their names, filled and destroyed
 * once more: pools of one name made by one call share its frame. */
#include <stdio.h>
#include <stdlib.h>

#include "mprof.h"

#define MAX_POOLS 200000u
#define MAX_OBJECTS 3u
#define MAX_OBJECT 40u

static char anchors[MAX_POOLS];
static char memory[MAX_POOLS][MAX_OBJECTS * MAX_OBJECT];

static void make_pool(unsigned i)
{
    char name[16];
    snprintf(name, sizeof name, "p%06u", i);
    MPROF_POOL_CREATE(&anchors[i], name);
}

static void fill(unsigned i)
{
    unsigned size = (i % 5 + 1) * 8;
    for (unsigned j = 0; j <= i % 3; j++)
        MPROF_POOL_ALLOC(&anchors[i], memory[i] + j * MAX_OBJECT, size);
}

int main(int argc, char **argv)
{
    unsigned pools = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 70000u;
    if (pools > MAX_POOLS)
        return 2;
    for (unsigned i = 0; i < pools; i++) {
        make_pool(i);
        fill(i);
        if (i % 2 == 0)
            MPROF_POOL_DESTROY(&anchors[i]);
    }
    for (unsigned i = 0; i < 20 && i < pools; i += 2) {
        make_pool(i);
        fill(i);
        MPROF_POOL_DESTROY(&anchors[i]);
    }
    return 0;
}
