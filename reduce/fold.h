/* The reports' folding of a table's long call paths (fold.c), the loops of
 * fold_paths in src/mprof/report/folding.py, whose docstrings give the
 * rules: a big C++ program's peak table holds tens of thousands of paths a
 * hundred frames deep, and measuring their folds one Python object at a
 * time cost seconds.  Python numbers the frames and strings; this side
 * says which frames each path folds. */
#ifndef MPROF_REDUCE_FOLD_H
#define MPROF_REDUCE_FOLD_H

#include <stddef.h>
#include <stdint.h>

#include "reduce.h"

/* A table's paths, each outermost first, laid end to end.  A kind is one
 * distinct frame of the table (many rows share their frames); strings are
 * the frames' texts and their origins, each distinct string once, so that
 * two frames read the same exactly when their text numbers are equal.
 * Widths count characters (string_length), as Python's len does; the
 * bytes are only compared and copied, never measured. */
struct mr_fold_table {
    size_t path_count;
    const uint32_t *frame_count;   /* per path */
    const uint8_t *partial;        /* per path: 1 when it does not reach main ("..." above it) */
    const uint32_t *frame_kind;    /* per frame */
    size_t kind_count;
    const uint32_t *kind_text;     /* per kind: the string the frame shows */
    const uint32_t *kind_origin;   /* per kind: the string a fold holding it names */
    const uint8_t *kind_own;       /* per kind: 1 for the program's own code */
    size_t string_count;
    const uint64_t *string_end;    /* per string: where its bytes end in bytes */
    const uint32_t *string_length; /* per string: its length in characters */
    const char *bytes;             /* the strings in an encoding where equal bytes are equal strings */
    int64_t width;                 /* characters a path may take before it folds */
};

/* Folds the table's paths as fold_paths does, and says which frames each
 * folds as runs of consecutive frames: run_count[p] runs for path p, their
 * positions in it run_start[r] <= position < run_end[r], path after path;
 * run_number[r] numbers the runs by the frames (kinds) they hold, in the
 * order they first come, so that runs of the same frames share a number.
 * run_start, run_end and run_number hold as many entries as the table has
 * frames.  MR_CORRUPT: a number past its table. */
MR_EXPORT int mr_fold_paths(const struct mr_fold_table *table, uint32_t *run_count, uint32_t *run_start,
                            uint32_t *run_end, uint32_t *run_number);

/* Numbers a table's frames by their identities (Python's id of each
 * frame object), in the order they first come: frame_kind[f] for each
 * frame, kind_first[k] the first frame of kind k, *kind_count how many.
 * kind_first holds as many entries as there are frames. */
MR_EXPORT int mr_fold_kinds(const uint64_t *identity, size_t frame_count, uint32_t *frame_kind, uint32_t *kind_first,
                            size_t *kind_count);

#endif
