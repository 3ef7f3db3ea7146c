/* The paths table read for the C walks, and a path's figures (pathrows.h). */
#include "pathrows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* Rows fit an index slot's 32 bits. */
#define LIMIT (UINT32_MAX - 2)

int pr_open(const void *database, size_t database_size, sqlite3 **db, char *error, size_t error_size)
{
    *db = NULL;
    /* One thread uses the connection, which so takes no lock a call. */
    if (sqlite3_open_v2(":memory:", db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK &&
        sqlite3_deserialize(*db, "main", (unsigned char *)(uintptr_t)database, (sqlite3_int64)database_size,
                            (sqlite3_int64)database_size, SQLITE_DESERIALIZE_READONLY) == SQLITE_OK)
        return MR_OK;
    snprintf(error, error_size, "%s", *db ? sqlite3_errmsg(*db) : "out of memory");
    sqlite3_close(*db);
    *db = NULL;
    return MR_DATABASE;
}

static int by_node(const void *a, const void *b)
{
    const struct pr_row *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->rowid < y->rowid ? -1 : x->rowid > y->rowid;
}

int pr_read(sqlite3 *db, const struct pr_measures *measures, struct pr_row **rows, size_t *count)
{
    *rows = NULL;
    *count = 0;
    sqlite3_stmt *statement;
    /* The rows as the table holds them, then put in order: ORDER BY node_id
     * would look each row up from the index, a seek a row. */
    if (sqlite3_prepare_v2(db,
                           "SELECT rowid, node_id, allocs, frees, bytes_s, bytes_m, bytes_l, bytes_x, freed_s, "
                           "freed_m, freed_l, freed_x, temporaries, peak_blocks, peak_bytes, runtime FROM paths",
                           -1, &statement, NULL) != SQLITE_OK)
        return MR_DATABASE;
    size_t capacity = 0;
    int status = MR_OK, step = SQLITE_DONE;
    while ((step = sqlite3_step(statement)) == SQLITE_ROW) {
        if (*count >= LIMIT || !grow((void **)rows, &capacity, *count, sizeof **rows)) {
            status = MR_NO_MEMORY;
            break;
        }
        struct pr_row *row = &(*rows)[(*count)++];
        row->rowid = sqlite3_column_int64(statement, 0);
        bool no_node = sqlite3_column_type(statement, 1) == SQLITE_NULL;
        row->node = no_node ? PR_NO_NODE : sqlite3_column_int64(statement, 1);
        if (!no_node && row->node == PR_NO_NODE) {
            status = MR_CORRUPT;
            break;
        }
        for (int f = 0; f < PR_FIELDS; f++)
            row->columns[f] = sqlite3_column_int64(statement, 2 + f);
        row->runtime = sqlite3_column_type(statement, 2 + PR_FIELDS) != SQLITE_NULL &&
                       sqlite3_column_bytes(statement, 2 + PR_FIELDS) > 0;
    }
    if (status == MR_OK && step != SQLITE_DONE)
        status = MR_DATABASE;
    sqlite3_finalize(statement);
    if (status == MR_OK && measures->values && *count * measures->width != measures->value_count)
        status = MR_CORRUPT;
    if (status == MR_OK) {
        /* The reducer writes them in that order: mostly a check, not a sort. */
        bool sorted = true;
        for (size_t n = 1; sorted && n < *count; n++)
            sorted = by_node(&(*rows)[n - 1], &(*rows)[n]) < 0;
        if (!sorted)
            qsort(*rows, *count, sizeof **rows, by_node);
    }
    return status;
}

int pr_figures(const struct pr_measures *measures, const struct pr_row *row, size_t path, size_t *next_suppressed,
               int64_t *values)
{
    unsigned width = measures->width;
    if (measures->values) {
        memcpy(values, measures->values + path * width, width * sizeof(int64_t));
        return MR_OK;
    }
    while (*next_suppressed < measures->suppressed_count && measures->suppressed[*next_suppressed] < (int64_t)path)
        (*next_suppressed)++;
    bool suppressed = *next_suppressed < measures->suppressed_count &&
                      measures->suppressed[*next_suppressed] == (int64_t)path;
    for (unsigned m = 0; m < width; m++) {
        int64_t sum = 0;
        uint8_t gates = measures->gates[m];
        if (!((gates & PR_GATE_RUNTIME) && row->runtime) && !((gates & PR_GATE_SUPPRESSED) && suppressed)) {
            for (int f = 0; f < PR_FIELDS; f++) {
                int64_t term, coefficient = measures->coefficients[m * PR_FIELDS + f];
                if (!coefficient)
                    continue; /* most are: a measure sums a few columns */
                if (__builtin_mul_overflow(row->columns[f], coefficient, &term) ||
                    __builtin_add_overflow(sum, term, &sum))
                    return MR_OVERFLOW;
            }
        }
        values[m] = sum;
    }
    return MR_OK;
}
