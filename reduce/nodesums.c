/* The paths' figures by node, for the flame graphs (nodesums.h). */
#include "nodesums.h"

#include <stdio.h>
#include <stdlib.h>

#include <sqlite3.h>

static int add(int64_t *sum, int64_t value)
{
    return __builtin_add_overflow(*sum, value, sum) ? MR_OVERFLOW : MR_OK;
}

int ns_node_sums(const void *database, size_t database_size, const struct pr_measures *measures,
                 const int64_t *ids, size_t node_count, int64_t *sums, int64_t *unwound, char *error,
                 size_t error_size)
{
    unsigned width = measures->width;
    sqlite3 *db;
    int status = pr_open(database, database_size, &db, error, error_size);
    if (status != MR_OK)
        return status;
    struct pr_row *rows = NULL;
    size_t count = 0;
    status = pr_read(db, measures, &rows, &count);
    if (status == MR_DATABASE)
        snprintf(error, error_size, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
    int64_t *values = status == MR_OK ? malloc((width + 1) * sizeof(int64_t)) : NULL;
    if (status == MR_OK && !values)
        status = MR_NO_MEMORY;
    /* The nodes by id, as pr_node_index finds them: only their ids. */
    const struct pr_nodes nodes = {.count = node_count, .id = (int64_t *)(uintptr_t)ids};
    size_t next_suppressed = 0;
    for (size_t path = 0; status == MR_OK && path < count; path++) {
        status = pr_figures(measures, &rows[path], path, &next_suppressed, values);
        int64_t *into = unwound;
        size_t stride = 1;
        if (status == MR_OK && rows[path].node != PR_NO_NODE) {
            int64_t place = pr_node_index(&nodes, rows[path].node);
            if (place < 0)
                status = MR_CORRUPT;
            into = sums + place;
            stride = node_count;
        }
        for (unsigned m = 0; status == MR_OK && m < width; m++)
            status = add(&into[m * stride], values[m]);
    }
    free(values);
    free(rows);
    return status;
}
