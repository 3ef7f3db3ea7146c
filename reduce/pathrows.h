/* A report's whole paths as the C walks read them (diffwalk.c, export.c,
 * page.c): the path_nodes and paths tables of the report's database, as sqlite3_serialize lays it
 * out, in PathTree.rows()'s order, and each path's figures as a report's
 * measures count them (src/mprof/report/measures.py's as_sums). */
#ifndef MPROF_REDUCE_PATHROWS_H
#define MPROF_REDUCE_PATHROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "reduce.h"

/* A measure is a sum of a path's columns, in the paths table's order
 * (allocs, frees, bytes_s .. bytes_x, freed_s .. freed_x, temporaries,
 * peak_blocks, peak_bytes, definite_blocks .. reachable_bytes), each times
 * a coefficient, and 0 where a gate holds. */
#define PR_FIELDS MR_FIGURES
#define PR_GATE_RUNTIME 1    /* the path's blocks are kept by a C or C++ runtime */
#define PR_GATE_SUPPRESSED 2 /* a leak suppression took the path */

/* The node id of a path of no caller: no node has it. */
#define PR_NO_NODE INT64_MIN

/* width measures, each PR_FIELDS coefficients and gates, the suppressed
 * paths by their place in PathTree.rows()'s order (ascending); or, values
 * not NULL, width figures a path in that order in place of the sums. */
struct pr_measures {
    unsigned width;
    const int64_t *coefficients;
    const uint8_t *gates;
    const int64_t *suppressed;
    size_t suppressed_count;
    const int64_t *values;
    size_t value_count;
};

struct pr_row {
    int64_t node; /* its innermost node's id; PR_NO_NODE: no caller */
    int64_t rowid;
    int64_t columns[PR_FIELDS];
    bool runtime; /* as PathRow.runtime: neither NULL nor empty */
};

/* path_nodes in the order of their ids (ascending), each parent as its
 * index, -1 for none. */
struct pr_nodes {
    size_t count;
    int64_t *id;
    int64_t *parent;
    int64_t *function;
    int64_t *line;
    uint8_t *inlined;
};

/* Reads path_nodes into nodes (zeroed).  MR_CORRUPT: ids not ascending,
 * or a parent that is not a node before its child (validate.py holds a
 * database to both: every walk up a path ends). */
int pr_read_nodes(sqlite3 *db, struct pr_nodes *nodes);
/* The arrays of nodes, not nodes itself. */
void pr_nodes_free(struct pr_nodes *nodes);
/* The index of the node whose id is id, -1 for none. */
int64_t pr_node_index(const struct pr_nodes *nodes, int64_t id);
/* path_nodes of a database as sqlite3_serialize lays it out, into *out
 * (for pr_nodes_delete); MR_CORRUPT as pr_read_nodes says, MR_DATABASE
 * with SQLite's words in error. */
MR_EXPORT int pr_nodes_read(const void *database, size_t database_size, struct pr_nodes **out, char *error,
                            size_t error_size);
MR_EXPORT void pr_nodes_delete(struct pr_nodes *nodes);

/* The database at database, read where it lies, through a connection of
 * one thread's; MR_DATABASE, and no connection, with SQLite's words in
 * error. */
int pr_open(const void *database, size_t database_size, sqlite3 **db, char *error, size_t error_size);

/* The paths' rows, in PathTree.rows()'s order (paths ORDER BY node_id: no
 * caller first, ties in the order of their rows), into *rows (malloc'd,
 * the caller frees it), so many as measures' values give figures for. */
int pr_read(sqlite3 *db, const struct pr_measures *measures, struct pr_row **rows, size_t *count);

/* Walks the paths in that order, path after path: the figures of row, the
 * path at place path, width of them into values; *next_suppressed, 0 at the
 * first, keeps the walk's place in measures' suppressed paths. */
int pr_figures(const struct pr_measures *measures, const struct pr_row *row, size_t path, size_t *next_suppressed,
               int64_t *values);

#endif
