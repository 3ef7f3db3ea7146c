/* The HTML page's call path tables (src/mprof/report/html_rows.py, through
 * page_core.py): a profile's path nodes read from its database, the
 * functions of the paths a table shows, and a table of whole paths written
 * as the page's JSON.  cc1plus's peak table holds 17,612 paths of 625,264
 * frames in all; made a Python object a frame, they cost the page a second.
 * Names stay in Python: functions are the profile's ids, fold labels text
 * Python wrote. */
#ifndef MPROF_REDUCE_PAGE_H
#define MPROF_REDUCE_PAGE_H

#include <stddef.h>
#include <stdint.h>

#include "reduce.h"


/* The functions of the paths that end at the nodes of indexes ends (-1: a
 * path of no frame), outermost first, one path's after another's;
 * stops[n], where path n's end.  functions NULL: only the stops, for the
 * caller to make room.  MR_CORRUPT: an index past the nodes, or a parent
 * not before its child. */
MR_EXPORT int pg_chains(const int64_t *parent, const int64_t *function, size_t node_count, const int64_t *ends,
                        size_t count, uint64_t *stops, int64_t *functions);

/* What each run number's label says (folding.py's _fold_label), read from
 * its first run: folded[n] frames; counted[n] 1 when the label counts
 * them alone ("[N frames]": own code among them, or more than two
 * origins), else its origins in the order they come, first[n] and
 * second[n] (PG_NONE: one origin).  The paths (stops, as pg_chains gives
 * them), frames' kinds and runs are as mr_fold_paths takes and gives them
 * (fold.h); label_count, how many run numbers there are.  MR_CORRUPT: a
 * run, a kind or a number past its table. */
#define PG_NONE UINT32_MAX
MR_EXPORT int pg_fold_labels(const uint64_t *stops, size_t path_count, const uint32_t *frame_kind,
                             size_t frame_count, const uint32_t *kind_origin, const uint8_t *kind_own,
                             size_t kind_count, const uint32_t *run_count, const uint32_t *run_start,
                             const uint32_t *run_end, const uint32_t *run_number, size_t label_count,
                             uint32_t *folded, uint8_t *counted, uint32_t *first, uint32_t *second);

/* A table of whole paths as html_rows.py's rows, each {"c": [count,
 * size, (share of whole), path]}: the figures as Python's f"{n:,}" writes
 * them, the share as tables.parenthesised, the path as a list of one
 * {"p": elements} ("z": 1 when partial, "s": 1 when its functions are
 * named short), elements the functions' ids and
 * each folded run {"fold": its functions, "t": its label}, or
 * ["(no call chain)"] for a path of no frame.  The runs are as
 * mr_fold_paths gives them (fold.h); labels[label_end[n - 1]:label_end[n]]
 * is run number n's label, JSON text already (made safe for a page's
 * <script> by the caller).  JSON as Python's json.dumps writes it with
 * separators "," and ":". */
struct pg_path_rows {
    size_t row_count;
    const int64_t *count;
    const int64_t *size;
    int64_t whole;
    const uint64_t *stops;
    const int64_t *functions;
    const uint8_t *partial;
    const uint32_t *run_count;
    const uint32_t *run_start;
    const uint32_t *run_end;
    const uint32_t *run_number;
    size_t label_count;
    const uint64_t *label_end;
    const char *labels;
    const uint8_t *short_names; /* per row: its functions named short (FunctionRow.short) */
};

/* The rows' JSON array, *size bytes at *out, for pg_text_free.
 * MR_CORRUPT: a run or a label past its table. */
MR_EXPORT int pg_path_rows(const struct pg_path_rows *rows, char **out, size_t *size);
MR_EXPORT void pg_text_free(char *text);

#endif
