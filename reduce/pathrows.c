/* The path tables read for the C walks, and a path's figures (pathrows.h). */
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

void pr_nodes_free(struct pr_nodes *nodes)
{
    free(nodes->id);
    free(nodes->parent);
    free(nodes->function);
    free(nodes->line);
    free(nodes->inlined);
}

/* Ids ascend, and nearly always run without a gap. */
int64_t pr_node_index(const struct pr_nodes *nodes, int64_t id)
{
    size_t count = nodes->count;
    if (!count)
        return -1;
    if ((uint64_t)nodes->id[count - 1] - (uint64_t)nodes->id[0] == count - 1) {
        uint64_t at = (uint64_t)id - (uint64_t)nodes->id[0];
        return id >= nodes->id[0] && at < count ? (int64_t)at : -1;
    }
    size_t low = 0, high = count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (nodes->id[middle] < id)
            low = middle + 1;
        else
            high = middle;
    }
    return low < count && nodes->id[low] == id ? (int64_t)low : -1;
}

int pr_read_nodes(sqlite3 *db, struct pr_nodes *nodes)
{
    sqlite3_stmt *statement;
    if (sqlite3_prepare_v2(db, "SELECT id, parent_id, function_id, line, inlined FROM path_nodes ORDER BY id", -1,
                           &statement, NULL) != SQLITE_OK)
        return MR_DATABASE;
    size_t capacity = 0;
    int status = MR_OK, step = SQLITE_DONE;
    while ((step = sqlite3_step(statement)) == SQLITE_ROW) {
        size_t n = nodes->count;
        if (n == capacity) {
            capacity = capacity ? 2 * capacity : 4096;
            if (n >= LIMIT || !resize(&nodes->id, capacity, sizeof(int64_t)) ||
                !resize(&nodes->parent, capacity, sizeof(int64_t)) ||
                !resize(&nodes->function, capacity, sizeof(int64_t)) ||
                !resize(&nodes->line, capacity, sizeof(int64_t)) || !resize(&nodes->inlined, capacity, 1)) {
                status = MR_NO_MEMORY;
                break;
            }
        }
        nodes->id[n] = sqlite3_column_int64(statement, 0);
        if (n && nodes->id[n] <= nodes->id[n - 1]) {
            status = MR_CORRUPT;
            break;
        }
        /* The parent's id for now, its index below; INT64_MIN, none. */
        nodes->parent[n] = sqlite3_column_type(statement, 1) == SQLITE_NULL ? INT64_MIN
                                                                           : sqlite3_column_int64(statement, 1);
        nodes->function[n] = sqlite3_column_int64(statement, 2);
        nodes->line[n] = sqlite3_column_int64(statement, 3);
        nodes->inlined[n] = sqlite3_column_int64(statement, 4) != 0;
        nodes->count++;
    }
    if (status == MR_OK && step != SQLITE_DONE)
        status = MR_DATABASE;
    sqlite3_finalize(statement);
    for (size_t n = 0; status == MR_OK && n < nodes->count; n++) {
        if (nodes->parent[n] == INT64_MIN) {
            nodes->parent[n] = -1;
            continue;
        }
        int64_t parent = pr_node_index(nodes, nodes->parent[n]);
        if (parent < 0 || (size_t)parent >= n)
            status = MR_CORRUPT;
        nodes->parent[n] = parent;
    }
    return status;
}

void pr_nodes_delete(struct pr_nodes *nodes)
{
    if (!nodes)
        return;
    pr_nodes_free(nodes);
    free(nodes);
}

int pr_nodes_read(const void *database, size_t database_size, struct pr_nodes **out, char *error, size_t error_size)
{
    *out = NULL;
    struct pr_nodes *nodes = calloc(1, sizeof *nodes);
    if (!nodes)
        return MR_NO_MEMORY;
    sqlite3 *db;
    int status = pr_open(database, database_size, &db, error, error_size);
    if (status == MR_OK) {
        status = pr_read_nodes(db, nodes);
        if (status == MR_DATABASE)
            snprintf(error, error_size, "%s", sqlite3_errmsg(db));
        sqlite3_close(db);
    }
    if (status != MR_OK) {
        pr_nodes_delete(nodes);
        return status;
    }
    *out = nodes;
    return MR_OK;
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
                           "freed_m, freed_l, freed_x, temporaries, peak_blocks, peak_bytes, definite_blocks, definite_bytes, "
                           "indirect_blocks, indirect_bytes, possible_blocks, possible_bytes, reachable_blocks, "
                           "reachable_bytes, runtime FROM paths",
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
