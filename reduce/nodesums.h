/* The paths' figures summed by the node each path ends at, for the flame
 * graphs (src/mprof/report/flame.py): a scan of a big program's paths in
 * Python, a figure at a time, was a tenth of its page. */
#ifndef MPROF_REDUCE_NODESUMS_H
#define MPROF_REDUCE_NODESUMS_H

#include <stddef.h>
#include <stdint.h>

#include "pathrows.h"
#include "reduce.h"

/* Each of measures' figures of the paths of the database (as
 * sqlite3_serialize lays it out) added into sums[m * node_count + n], n
 * the place of the path's node among ids (node_count ids, ascending), or
 * into unwound[m] for a path of no caller.  MR_CORRUPT: a path's node is
 * not among ids; MR_OVERFLOW past 64 bits; MR_DATABASE with SQLite's
 * words in error. */
MR_EXPORT int ns_node_sums(const void *database, size_t database_size, const struct pr_measures *measures,
                           const int64_t *ids, size_t node_count, int64_t *sums, int64_t *unwound, char *error,
                           size_t error_size);

#endif
