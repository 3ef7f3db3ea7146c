/* Sorting pairs of words by their first, without the allocator: the
 * writer's addresses (snapshot.c), the leak scan's blocks (reach.c). */
#ifndef MPROF_RADIX_H
#define MPROF_RADIX_H

#include <stddef.h>
#include <stdint.h>

struct keyed_pair {
    uint64_t key;
    uint64_t value;
};

/* Sorts items by key, a byte a pass from the lowest (the passes over bytes
 * every key shares are skipped), through spare, which holds as many;
 * returns the array that holds them sorted.  Stable.  Not qsort, which may
 * allocate.  On cc1plus's writes (checkpoints and the last) a heapsort of
 * the addresses and a binary search for each node's, twice, took 110 ms of
 * samples; this and the index kept with the node, 45 (issue 31). */
struct keyed_pair *radix_sort_pairs(struct keyed_pair *items, struct keyed_pair *spare, size_t count);

#endif
