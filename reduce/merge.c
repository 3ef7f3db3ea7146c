/* What the reports merge and sort whole paths by, worked out once in the
 * reduction (schema.sql's paths.same_functions_id and paths.name_order):
 * done in a report, it meant walking up every path of a table whose rows
 * tie, a million paths of a wide tree, and comparing their names. */
#include "merge.h"

#include "index.h"

#include <stdbool.h>
#include <stdlib.h>

/* Each node's number of the first node (the least number) whose path
 * has the same keys, outermost first, key[k] being node k's: parents come
 * before their children, so a node's parent is known by its first node
 * already, and the first node of a path is the first found of its
 * (parent's first node, key).  NULL: out of memory. */
static uint64_t *first_of_same(const uint64_t *parent, const int64_t *key, size_t count)
{
    uint64_t *found = malloc((count ? count : 1) * sizeof *found);
    struct entry_index index;
    if (!found || !entry_index_init(&index)) {
        free(found);
        return NULL;
    }
    for (size_t row = 0; row < count; row++) {
        uint64_t above = parent[row] ? found[parent[row] - 1] : 0;
        uint64_t hash = mix(above * 0x9e3779b97f4a7c15ULL ^ (uint64_t)key[row]);
        size_t slot;
        bool known;
        ENTRY_INDEX_FIND(&index, hash, candidate,
                         (parent[candidate] ? found[parent[candidate] - 1] : 0) == above && key[candidate] == key[row],
                         slot, known);
        if (known) {
            found[row] = ENTRY_INDEX_AT(&index, slot) + 1;
            continue;
        }
        found[row] = row + 1;
        if (!entry_index_add(&index, slot, hash, row)) {
            free(found);
            found = NULL;
            break;
        }
    }
    entry_index_free(&index);
    return found;
}

/* A node of the tree of names (first_of_same by rank) among its siblings. */
struct sibling {
    uint64_t node;
    int64_t rank;
};

static int by_rank(const void *a, const void *b)
{
    const struct sibling *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The place, from 1, of each node of the tree of names in sorted order,
 * a path before those it is the start of: the order of a walk that visits
 * each node's children by rank.  named[k] is node k's first node of the
 * same names; only those first nodes get a place.  NULL: out of memory. */
static uint64_t *sorted_places(const uint64_t *parent, const int64_t *rank, const uint64_t *named, size_t count)
{
    /* The children of each first node (by its number, 0: the outermost
     * frames'), one parent's after another's from start[parent]. */
    size_t *start = calloc(count + 2, sizeof *start);
    size_t *filled = calloc(count + 1, sizeof *filled);
    struct sibling *children = malloc((count ? count : 1) * sizeof *children);
    uint64_t *stack = malloc((count ? count : 1) * sizeof *stack);
    uint64_t *place = calloc(count ? count : 1, sizeof *place);
    if (!start || !filled || !children || !stack || !place) {
        free(place);
        place = NULL;
        goto done;
    }
    for (size_t row = 0; row < count; row++)
        if (named[row] == row + 1)
            start[(parent[row] ? named[parent[row] - 1] : 0) + 1]++;
    for (size_t n = 1; n <= count + 1; n++)
        start[n] += start[n - 1];
    for (size_t row = 0; row < count; row++) {
        if (named[row] != row + 1)
            continue;
        uint64_t above = parent[row] ? named[parent[row] - 1] : 0;
        children[start[above] + filled[above]++] = (struct sibling){row + 1, rank[row]};
    }
    for (size_t n = 0; n <= count; n++)
        if (start[n + 1] - start[n] > 1)
            qsort(children + start[n], start[n + 1] - start[n], sizeof *children, by_rank);
    /* Depth first, each node's children pushed last first. */
    size_t depth = 0;
    uint64_t next_place = 0;
    for (size_t c = start[1]; c > start[0]; c--)
        stack[depth++] = children[c - 1].node;
    while (depth) {
        uint64_t node = stack[--depth];
        place[node - 1] = ++next_place;
        for (size_t c = start[node + 1]; c > start[node]; c--)
            stack[depth++] = children[c - 1].node;
    }
done:
    free(start);
    free(filled);
    free(children);
    free(stack);
    return place;
}

bool path_keys_make(const struct mr_numbered *numbered, const int64_t *function_ids, const uint32_t *function_rank,
                    struct path_keys *keys)
{
    size_t count = numbered->node_count;
    int64_t *key = calloc(count ? count : 1, sizeof *key);
    keys->same_functions = keys->name_place = NULL;
    if (!key)
        return false;
    for (size_t row = 0; row < count; row++)
        key[row] = function_ids[numbered->node_frame[row].function];
    keys->same_functions = first_of_same(numbered->node_parent, key, count);
    for (size_t row = 0; row < count; row++)
        key[row] = function_rank[numbered->node_frame[row].function];
    uint64_t *named = keys->same_functions ? first_of_same(numbered->node_parent, key, count) : NULL;
    uint64_t *places = named ? sorted_places(numbered->node_parent, key, named, count) : NULL;
    if (places) {
        /* Each node's place is its first node of the same names'. */
        for (size_t row = 0; row < count; row++)
            named[row] = places[named[row] - 1];
        keys->name_place = named;
        named = NULL;
    }
    free(places);
    free(named);
    free(key);
    if (!keys->name_place) {
        path_keys_free(keys);
        return false;
    }
    return true;
}

void path_keys_free(struct path_keys *keys)
{
    free(keys->same_functions);
    free(keys->name_place);
    keys->same_functions = keys->name_place = NULL;
}
