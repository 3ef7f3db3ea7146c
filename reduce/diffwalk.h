/* mprof diff's walk over two profiles' call paths (src/mprof/diff/compare.py,
 * through src/mprof/diff/walk_core.py): each side's path tree, read from its
 * database, summed into the rows diff compares (a row per call path,
 * function, direct allocation site, and function with its callees), so that
 * Python makes objects only for the rows a report shows.  A big program's
 * profile is hundreds of thousands of nodes; walking them in Python took
 * seconds.
 *
 * Functions are numbers the caller chose: each of a profile's function ids
 * names a key (a function across the two builds), keys below key_count, 0
 * the empty chain's (a path of no caller).  Rows come in the order a walk of
 * the base's paths, then the new's, first meets them, as the Python
 * reference (tests/python/reference_diff.py) adds them. */
#ifndef MPROF_REDUCE_DIFFWALK_H
#define MPROF_REDUCE_DIFFWALK_H

#include <stddef.h>
#include <stdint.h>

#include "pathrows.h"
#include "reduce.h"

/* The rows: whole paths by their functions' keys, outermost first (an
 * identity is a chain number); functions by the key of the innermost
 * (a key); sites, the innermost key and its file's name and line (a site
 * number); functions with their callees, every path counted once for each
 * key on it (a key). */
enum dw_kind { DW_PATHS, DW_FUNCTIONS, DW_SITES, DW_CUMULATIVE, DW_KINDS };

/* A node id no node has: a path of no caller's, and a row's on a side that
 * no path names it on (the cumulative view's rows are keys, not paths). */
#define DW_NO_NODE PR_NO_NODE

struct dw_view {
    size_t count;
    int64_t *figures[2]; /* width figures a row, the base's then the new's */
    /* The innermost node of the path that names the row on each side: the
     * base's first, the new's last (the new profile names what both have). */
    int64_t *node[2];
    uint8_t *seen[2];    /* whether each side has the row */
    uint32_t *identity;
};

struct dw_compare;

MR_EXPORT struct dw_compare *dw_new(unsigned width, uint32_t key_count);
MR_EXPORT void dw_free(struct dw_compare *compare);

/* Adds a side (0 base, 1 new): its database (path_nodes and paths, as
 * sqlite3_serialize lays it out), its function ids (ascending) and their
 * keys; a measure's coefficients (PR_FIELDS a measure) and gates (pathrows.h), the
 * suppressed paths by their place in paths ORDER BY node_id (ascending);
 * or, values not NULL, width figures of each path in that order in place of
 * the sums.  Paths whose figures are all 0 are not counted. */
MR_EXPORT int dw_add(struct dw_compare *compare, unsigned side, const void *database, size_t database_size,
                     const int64_t *function_ids, const uint32_t *function_keys, size_t function_count,
                     const int64_t *coefficients, const uint8_t *gates, const int64_t *suppressed,
                     size_t suppressed_count, const int64_t *values, size_t value_count, char *error,
                     size_t error_size);

/* The totals of a side's counted paths, width figures. */
MR_EXPORT const int64_t *dw_totals(const struct dw_compare *compare, unsigned side);
MR_EXPORT void dw_view(const struct dw_compare *compare, unsigned kind, struct dw_view *out);

/* The rows of a view whose figures differ between the sides, the largest
 * change of figure index first (by its size; ties in the rows' order), and
 * the size of each one's change, into arrays of the view's row count;
 * returns how many, or SIZE_MAX when memory ran out. */
MR_EXPORT size_t dw_changed(const struct dw_compare *compare, unsigned kind, unsigned index, uint32_t *rows,
                            uint64_t *sizes);

/* The functions of the paths of a side that end at nodes, outermost first,
 * one path's after another's; ends[n] where path n's end.  functions NULL:
 * only the ends, for the caller to make room.  MR_CORRUPT: a node the side
 * does not have. */
MR_EXPORT int dw_chains(const struct dw_compare *compare, unsigned side, const int64_t *nodes, size_t count,
                        uint64_t *ends, int64_t *functions);

/* The differential flame graph of figure index over the paths view: a
 * node for each chain that the rows with a figure on either side pass
 * through, and one for the row of no chain, in the order a walk of those
 * rows, outermost frame first, meets them; node 0 the root. */
struct dw_flame {
    size_t count;
    uint32_t *chain;        /* 0: the root, and the row of no chain (a child of the root) */
    uint32_t *row;          /* the first row through it, whose path names it; DW_NONE for the root */
    uint32_t *depth;        /* its frame's place on that row's path, the outermost 0 */
    int64_t *sums;          /* 3 a node: the base's figures, the new's, the larger of the two, row by row */
    uint32_t *first_child;  /* DW_NONE: none */
    uint32_t *next_sibling; /* the child of the same node made after it; DW_NONE: none */
};

#define DW_NONE UINT32_MAX

MR_EXPORT int dw_flame_make(const struct dw_compare *compare, unsigned index, struct dw_flame **out);
MR_EXPORT void dw_flame_free(struct dw_flame *flame);

#endif
