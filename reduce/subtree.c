/* Sums over a tree of path nodes for the reports' flame graphs: each
 * node's figure with its descendants', and each node's children.  A big
 * program's database holds a million nodes; walked as Python objects they
 * cost a flame graph seconds and a gigabyte. */
#include "reduce.h"

int mr_subtree_sums(const int64_t *parent, size_t count, int64_t *value)
{
    /* Parents come before their children: from the last node back, each
     * has its descendants' figures before it passes them up. */
    for (size_t n = count; n-- > 0;) {
        if (parent[n] < 0 || !value[n])
            continue;
        if ((size_t)parent[n] >= n || __builtin_add_overflow(value[parent[n]], value[n], &value[parent[n]]))
            return MR_OVERFLOW;
    }
    return MR_OK;
}

void mr_children(const int64_t *parent, size_t count, uint64_t *start, uint64_t *child)
{
    for (size_t n = 0; n <= count + 1; n++)
        start[n] = 0;
    for (size_t n = 0; n < count; n++)
        start[(size_t)(parent[n] + 1) + 1]++;
    for (size_t n = 1; n <= count + 1; n++)
        start[n] += start[n - 1];
    /* start[p] is where parent p's children go: each placed advances it,
     * leaving it at the next parent's first, so it is restored below. */
    for (size_t n = 0; n < count; n++)
        child[start[(size_t)(parent[n] + 1)]++] = n;
    for (size_t n = count + 1; n > 0; n--)
        start[n] = start[n - 1];
    start[0] = 0;
}
