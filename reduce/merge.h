/* Keys the reports merge and sort whole paths by (merge.c), for the
 * writer: each of a numbered tree's nodes (mr_numbered) by its number. */
#ifndef MPROF_REDUCE_MERGE_H
#define MPROF_REDUCE_MERGE_H

#include "reduce.h"

#include <stdbool.h>

struct path_keys {
    /* The first node (least number) whose path has the node's functions,
     * outermost first: schema.sql's same_functions_id. */
    uint64_t *same_functions;
    /* The place, from 1, of the node's path's function names among every
     * path's, in sorted order (by function_rank, a prefix first); equal
     * for paths whose names read the same: schema.sql's name_order. */
    uint64_t *name_place;
};

/* function_ids and function_rank are by the frames' function numbers;
 * function_rank orders the functions by their names, equal for equal
 * names.  False: out of memory. */
bool path_keys_make(const struct mr_numbered *numbered, const int64_t *function_ids, const uint32_t *function_rank,
                    struct path_keys *keys);
void path_keys_free(struct path_keys *keys);

#endif
