/* mprof export's walks over a profile's whole call paths (src/mprof/export/,
 * through export_core.py): a pprof profile's samples, locations and
 * functions, encoded, and collapsed stacks, written out.  A big program's
 * profile holds hundreds of thousands of nodes and millions of a path's
 * frames; walked in Python they took seconds and hundreds of megabytes.
 *
 * Each reads the path tables from the database as sqlite3_serialize lays it
 * out (the report's in-memory copy), in PathTree.rows()'s order, and counts
 * the paths as pathrows.h's measures do.  Names stay in Python: functions
 * are their profile's ids, or numbers the caller chose. */
#ifndef MPROF_REDUCE_EXPORT_H
#define MPROF_REDUCE_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "pathrows.h"
#include "reduce.h"

/* What the pprof walk met, in the order the Python reference
 * (tests/python/reference_export.py) meets it, for Python to name: a new
 * function (its id), a new location (the id of the function of its
 * outermost line, whose module is its mapping), or the location of no
 * chain and its function. */
enum ex_event { EX_FUNCTION = 0, EX_LOCATION = 1, EX_NO_CHAIN = 2 };

struct ex_pprof {
    size_t path_count;
    const uint8_t *counted;    /* whether each path is counted, a sample */
    size_t event_count;
    uint8_t *event_kind;
    int64_t *event_function;
    uint64_t *event_path;      /* the place of the path whose walk met it */
    /* The counted paths whose runtime column is not empty: their places and rowids. */
    size_t runtime_count;
    uint64_t *runtime_path;
    int64_t *runtime_rowid;
    size_t function_count;     /* pprof's functions, numbered from 1 in the order met */
    size_t location_count;     /* likewise its locations */
    /* After ex_pprof_encode: Profile's sample fields, then its location
     * fields, then its function fields, as protobuf encodes them. */
    uint8_t *bytes;
    size_t size;
    size_t locations_at;       /* where the locations start in bytes */
    size_t functions_at;
    void *walk;                /* what the encoding needs of the walk */
};

/* Walks the paths: each counted path's locations, pprof's ids. */
MR_EXPORT int ex_pprof_walk(const void *database, size_t database_size, const struct pr_measures *measures,
                            struct ex_pprof **out, char *error, size_t error_size);

/* Encodes the walk's profile: of each function (by pprof id - 1), its
 * name, system name and file name as string table indices, and its start
 * line; each location's mapping id (0: none); labels, a key and a value
 * (string table indices) each, of the paths at label_path (ascending, in
 * the order a path's labels come). */
MR_EXPORT int ex_pprof_encode(struct ex_pprof *pprof, const int64_t *name, const int64_t *system_name,
                              const int64_t *filename, const int64_t *start_line, const uint64_t *mapping,
                              const uint64_t *label_path, const int64_t *label_key, const int64_t *label_value,
                              size_t label_count);
MR_EXPORT void ex_pprof_free(struct ex_pprof *pprof);

/* Collapsed stacks of one measure (width 1): a line for each list of
 * names of the counted paths' frames, outermost first, joined by ';', then
 * a space and the sum of its paths' figures; lines sorted by their bytes.
 * The names are name_count texts, sorted by their bytes and each distinct,
 * laid end to end in names (name_end[n], where name n ends), none holding
 * ';' or a line's end; a function's name, name_of[n] for function_ids[n]
 * (ascending); a path of no chain is named no_chain alone.  The text is
 * *out, *size bytes, for ex_collapsed_free. */
MR_EXPORT int ex_collapsed(const void *database, size_t database_size, const struct pr_measures *measures,
                           const int64_t *function_ids, const uint32_t *name_of, size_t function_count,
                           const char *names, const uint64_t *name_end, size_t name_count, uint32_t no_chain,
                           char **out, size_t *size, char *error, size_t error_size);
MR_EXPORT void ex_collapsed_free(char *text);

#endif
