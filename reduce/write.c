/* Writing a numbered tree (mr_tree_number) into a profile database's
 * path_nodes and paths tables (schema.sql) through SQLite's C API: a big
 * program's tree is hundreds of thousands of rows, each a dozen values. */
#include "index.h"
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

/* Each node's number of the first node (the least number) whose
 * path has the same functions, outermost first (schema.sql's
 * same_functions_id): the reports merge paths by it, which would otherwise
 * walk every path that may share its functions with another.  Parents come
 * before their children, so a node's parent is known by its first node
 * already, and the first node of a path is the first found of its
 * (parent's first node, function).  NULL: out of memory. */
static uint64_t *same_functions(const struct mr_numbered *numbered, const int64_t *function_ids)
{
    const uint64_t *parent = numbered->node_parent;
    uint64_t *found = malloc((numbered->node_count ? numbered->node_count : 1) * sizeof *found);
    struct entry_index index;
    if (!found || !entry_index_init(&index)) {
        free(found);
        return NULL;
    }
    for (size_t row = 0; row < numbered->node_count; row++) {
        uint64_t above = parent[row] ? found[parent[row] - 1] : 0;
        int64_t function = function_ids[numbered->node_frame[row].function];
        uint64_t hash = mix(above * 0x9e3779b97f4a7c15ULL ^ (uint64_t)function);
        size_t slot;
        bool known;
        ENTRY_INDEX_FIND(&index, hash, candidate,
                         (parent[candidate] ? found[parent[candidate] - 1] : 0) == above &&
                             function_ids[numbered->node_frame[candidate].function] == function,
                         slot, known);
        if (known) {
            found[row] = ENTRY_INDEX_AT(&index, slot) + 1;
            continue;
        }
        found[row] = row + 1;
        if (!entry_index_add(&index, slot, hash, row)) {
            free(found);
            found = NULL;
            break;
        }
    }
    entry_index_free(&index);
    return found;
}

static int write_paths(sqlite3 *db, const struct mr_numbered *numbered, const uint32_t *runtime,
                       const struct mr_text *runtimes, const uint64_t *first)
{
    sqlite3_stmt *statement;
    int status = sqlite3_prepare_v2(db, "INSERT INTO paths VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                    -1, &statement, NULL);
    for (size_t row = 0; status == SQLITE_OK && row < numbered->path_count; row++) {
        uint64_t node = numbered->path_node[row];
        if (node) {
            sqlite3_bind_int64(statement, 1, (sqlite3_int64)node);
            sqlite3_bind_int64(statement, 3 + MR_FIGURES, (sqlite3_int64)first[node - 1]);
        } else {
            sqlite3_bind_null(statement, 1);
            sqlite3_bind_null(statement, 3 + MR_FIGURES);
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
                      const struct mr_text *files, const uint32_t *runtime, const struct mr_text *runtimes,
                      char *error, size_t error_size)
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
    uint64_t *first = status == SQLITE_OK ? same_functions(numbered, function_ids) : NULL;
    if (status == SQLITE_OK && !first) {
        sqlite3_close(db);
        return MR_NO_MEMORY;
    }
    if (status == SQLITE_OK)
        status = write_paths(db, numbered, runtime, runtimes, first);
    free(first);
    if (status == SQLITE_OK)
        status = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (status != SQLITE_OK)
        status = fail(db, error, error_size);
    sqlite3_close(db);
    return status;
}
