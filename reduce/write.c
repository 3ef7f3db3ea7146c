/* Writing a numbered tree (mr_tree_number) into a profile database's
 * path_nodes and paths tables (schema.sql) through SQLite's C API: a big
 * program's tree is hundreds of thousands of rows, each a dozen values. */
#include "merge.h"
#include "reduce.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

static int fail(sqlite3 *db, char *error, size_t error_size)
{
    snprintf(error, error_size, "%s", db ? sqlite3_errmsg(db) : "out of memory");
    return MR_DATABASE;
}

/* Binds a text of the program's world: TEXT, or a BLOB of its bytes when
 * it is not UTF-8 (see store.py). */
static int bind_text(sqlite3_stmt *statement, int column, const struct mr_text *text)
{
    return text->utf8 ? sqlite3_bind_text(statement, column, text->bytes, (int)text->size, SQLITE_STATIC)
                      : sqlite3_bind_blob(statement, column, text->bytes, (int)text->size, SQLITE_STATIC);
}

/* Values past SQLite's signed INTEGER are stored as their two's complement,
 * as store.py stores them. */
static int bind_u64(sqlite3_stmt *statement, int column, uint64_t value)
{
    return sqlite3_bind_int64(statement, column, (sqlite3_int64)value);
}

static int step(sqlite3_stmt *statement)
{
    int status = sqlite3_step(statement);
    sqlite3_reset(statement);
    return status == SQLITE_DONE ? SQLITE_OK : status;
}

static int write_nodes(sqlite3 *db, const struct mr_numbered *numbered, const int64_t *function_ids,
                       const struct mr_text *files)
{
    sqlite3_stmt *statement;
    int status = sqlite3_prepare_v2(db, "INSERT INTO path_nodes VALUES (?, ?, ?, ?, ?, ?)", -1, &statement, NULL);
    for (size_t row = 0; status == SQLITE_OK && row < numbered->node_count; row++) {
        const struct mr_frame *frame = &numbered->node_frame[row];
        sqlite3_bind_int64(statement, 1, (sqlite3_int64)row + 1);
        if (numbered->node_parent[row])
            sqlite3_bind_int64(statement, 2, (sqlite3_int64)numbered->node_parent[row]);
        else
            sqlite3_bind_null(statement, 2);
        sqlite3_bind_int64(statement, 3, function_ids[frame->function]);
        status = bind_text(statement, 4, &files[frame->file]);
        sqlite3_bind_int64(statement, 5, frame->line);
        sqlite3_bind_int64(statement, 6, frame->inlined);
        if (status == SQLITE_OK)
            status = step(statement);
    }
    sqlite3_finalize(statement);
    return status;
}

static int write_paths(sqlite3 *db, const struct mr_numbered *numbered, const uint32_t *runtime,
                       const struct mr_text *runtimes, const struct path_keys *keys)
{
    sqlite3_stmt *statement;
    int status = sqlite3_prepare_v2(db, "INSERT INTO paths VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                    -1, &statement, NULL);
    for (size_t row = 0; status == SQLITE_OK && row < numbered->path_count; row++) {
        uint64_t node = numbered->path_node[row];
        if (node) {
            sqlite3_bind_int64(statement, 1, (sqlite3_int64)node);
            sqlite3_bind_int64(statement, 3 + MR_FIGURES, (sqlite3_int64)keys->same_functions[node - 1]);
            sqlite3_bind_int64(statement, 4 + MR_FIGURES, (sqlite3_int64)keys->name_place[node - 1]);
        } else {
            /* No function: before every other path. */
            sqlite3_bind_null(statement, 1);
            sqlite3_bind_null(statement, 3 + MR_FIGURES);
            sqlite3_bind_int64(statement, 4 + MR_FIGURES, 0);
        }
        const uint64_t *figures = mr_tree_path_figures(numbered->tree, numbered->path_order[row]);
        for (int f = 0; f < MR_FIGURES; f++)
            bind_u64(statement, 2 + f, figures[f]);
        status = bind_text(statement, 2 + MR_FIGURES, &runtimes[runtime[numbered->path_chain[row]]]);
        if (status == SQLITE_OK)
            status = step(statement);
    }
    sqlite3_finalize(statement);
    return status;
}

int mr_numbered_write(const struct mr_numbered *numbered, const char *database, const int64_t *function_ids,
                      const uint32_t *function_rank, const struct mr_text *files, const uint32_t *runtime,
                      const struct mr_text *runtimes, char *error, size_t error_size)
{
    sqlite3 *db = NULL;
    /* One thread writes through this connection: no locks around each call. */
    if (sqlite3_open_v2(database, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        int status = fail(db, error, error_size);
        sqlite3_close(db);
        return status;
    }
    /* A database being made: the caller puts it in place only once whole. */
    int status = sqlite3_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN", NULL, NULL, NULL);
    if (status == SQLITE_OK)
        status = write_nodes(db, numbered, function_ids, files);
    struct path_keys keys;
    if (status == SQLITE_OK && !path_keys_make(numbered, function_ids, function_rank, &keys)) {
        sqlite3_close(db);
        return MR_NO_MEMORY;
    }
    if (status == SQLITE_OK) {
        status = write_paths(db, numbered, runtime, runtimes, &keys);
        path_keys_free(&keys);
    }
    if (status == SQLITE_OK)
        status = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (status != SQLITE_OK)
        status = fail(db, error, error_size);
    sqlite3_close(db);
    return status;
}
