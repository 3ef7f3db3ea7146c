/* Writing a numbered tree (mr_tree_number) into a profile database's
 * path_nodes and paths tables (schema.sql) through SQLite's C API: a big
 * program's tree is hundreds of thousands of rows, each a dozen values. */
#include "merge.h"
#include "reduce.h"

#include <pthread.h>
#include <stdbool.h>
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

/* Rows go in this many to a statement: SQLite's cost is mostly per
 * statement run, not per value bound (cc1plus's 383,000 path nodes took
 * 0.18 s a row at a time, 0.11 s 64 at a time). */
#define ROWS_AT_ONCE 64
/* The most values a row of a table written here has (paths'). */
#define MOST_COLUMNS 25

/* An INSERT of rows rows into table, each of columns values. */
static int prepare_insert(sqlite3 *db, const char *table, int columns, int rows, sqlite3_stmt **statement)
{
    char sql[64 + ROWS_AT_ONCE * (2 * MOST_COLUMNS + 2)];
    int at = snprintf(sql, sizeof sql, "INSERT INTO %s VALUES ", table);
    for (int row = 0; row < rows; row++) {
        sql[at++] = row ? ',' : ' ';
        sql[at++] = '(';
        for (int column = 0; column < columns; column++) {
            sql[at++] = '?';
            sql[at++] = column + 1 < columns ? ',' : ')';
        }
    }
    sql[at] = '\0';
    return sqlite3_prepare_v2(db, sql, at + 1, statement, NULL);
}

enum { NODE_COLUMNS = 6 };

struct node_rows {
    const struct mr_numbered *numbered;
    const int64_t *function_ids;
    const struct mr_text *files;
};

static int bind_node(sqlite3_stmt *statement, int first, size_t row, const void *rows)
{
    const struct node_rows *nodes = rows;
    const struct mr_frame *frame = &nodes->numbered->node_frame[row];
    uint64_t parent = nodes->numbered->node_parent[row];
    sqlite3_bind_int64(statement, first, (sqlite3_int64)row + 1);
    if (parent)
        sqlite3_bind_int64(statement, first + 1, (sqlite3_int64)parent);
    else
        sqlite3_bind_null(statement, first + 1);
    sqlite3_bind_int64(statement, first + 2, nodes->function_ids[frame->function]);
    sqlite3_bind_int64(statement, first + 4, frame->line);
    sqlite3_bind_int64(statement, first + 5, frame->inlined);
    return bind_text(statement, first + 3, &nodes->files[frame->file]);
}

/* What binds a table's row of the given number to the statement's values
 * from first on. */
typedef int bind_row(sqlite3_stmt *statement, int first, size_t row, const void *rows);

/* count rows of columns values into table, ROWS_AT_ONCE a statement. */
static int write_rows(sqlite3 *db, const char *table, int columns, size_t count, bind_row *bind, const void *rows)
{
    size_t whole = count - count % ROWS_AT_ONCE;
    sqlite3_stmt *many = NULL, *one = NULL;
    int status = prepare_insert(db, table, columns, ROWS_AT_ONCE, &many);
    if (status == SQLITE_OK)
        status = prepare_insert(db, table, columns, 1, &one);
    for (size_t row = 0; status == SQLITE_OK && row < count;) {
        sqlite3_stmt *statement = row < whole ? many : one;
        size_t end = row < whole ? row + ROWS_AT_ONCE : row + 1;
        for (int first = 1; status == SQLITE_OK && row < end; row++, first += columns)
            status = bind(statement, first, row, rows);
        if (status == SQLITE_OK)
            status = step(statement);
    }
    sqlite3_finalize(many);
    sqlite3_finalize(one);
    return status;
}

struct path_rows {
    const struct mr_numbered *numbered;
    const uint32_t *runtime;
    const struct mr_text *runtimes;
    const struct path_keys *keys;
};

enum { PATH_COLUMNS = 4 + MR_FIGURES };
_Static_assert(PATH_COLUMNS <= MOST_COLUMNS, "prepare_insert's statement holds a row of paths");

static int bind_path(sqlite3_stmt *statement, int first, size_t row, const void *rows)
{
    const struct path_rows *paths = rows;
    const struct mr_numbered *numbered = paths->numbered;
    uint64_t node = numbered->path_node[row];
    if (node) {
        sqlite3_bind_int64(statement, first, (sqlite3_int64)node);
        sqlite3_bind_int64(statement, first + 2 + MR_FIGURES, (sqlite3_int64)paths->keys->same_functions[node - 1]);
        sqlite3_bind_int64(statement, first + 3 + MR_FIGURES, (sqlite3_int64)paths->keys->name_place[node - 1]);
    } else {
        /* No function: before every other path. */
        sqlite3_bind_null(statement, first);
        sqlite3_bind_null(statement, first + 2 + MR_FIGURES);
        sqlite3_bind_int64(statement, first + 3 + MR_FIGURES, 0);
    }
    const uint64_t *figures = mr_tree_path_figures(numbered->tree, numbered->path_order[row]);
    for (int f = 0; f < MR_FIGURES; f++)
        bind_u64(statement, first + 1 + f, figures[f]);
    return bind_text(statement, first + 1 + MR_FIGURES, &paths->runtimes[paths->runtime[numbered->path_chain[row]]]);
}

/* A write of the path tables: its thread inserts the nodes while the
 * starting thread works out the paths' keys, which the paths need. */
struct mr_write {
    const struct mr_numbered *numbered;
    char *database;
    const int64_t *function_ids;
    const struct mr_text *files;
    const uint32_t *runtime;
    const struct mr_text *runtimes;
    pthread_mutex_t lock; /* guards keys_done, set once by the starting thread */
    pthread_cond_t keys_ready;
    bool keys_done;
    bool keys_made; /* false: memory ran out */
    struct path_keys keys;
    bool threaded;
    pthread_t thread;
    int status;
    char error[512];
};

static void wait_for_keys(struct mr_write *job)
{
    pthread_mutex_lock(&job->lock);
    while (!job->keys_done)
        pthread_cond_wait(&job->keys_ready, &job->lock);
    pthread_mutex_unlock(&job->lock);
}

static void write_tables(struct mr_write *job)
{
    sqlite3 *db = NULL;
    /* One thread writes through this connection: no locks around each call. */
    if (sqlite3_open_v2(job->database, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        job->status = fail(db, job->error, sizeof job->error);
        sqlite3_close(db);
        return;
    }
    /* A database being made: the caller puts it in place only once whole. */
    int status = sqlite3_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN", NULL, NULL, NULL);
    struct node_rows nodes = {job->numbered, job->function_ids, job->files};
    if (status == SQLITE_OK)
        status = write_rows(db, "path_nodes", NODE_COLUMNS, job->numbered->node_count, bind_node, &nodes);
    wait_for_keys(job);
    if (!job->keys_made) {
        sqlite3_close(db);
        job->status = MR_NO_MEMORY;
        return;
    }
    struct path_rows paths = {job->numbered, job->runtime, job->runtimes, &job->keys};
    if (status == SQLITE_OK)
        status = write_rows(db, "paths", PATH_COLUMNS, job->numbered->path_count, bind_path, &paths);
    if (status == SQLITE_OK)
        status = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    job->status = status == SQLITE_OK ? MR_OK : fail(db, job->error, sizeof job->error);
    sqlite3_close(db);
}

static void *writing(void *argument)
{
    write_tables(argument);
    return NULL;
}

int mr_write_start(const struct mr_numbered *numbered, const char *database, const int64_t *function_ids,
                   const uint32_t *function_rank, const struct mr_text *files, const uint32_t *runtime,
                   const struct mr_text *runtimes, struct mr_write **out)
{
    struct mr_write *job = malloc(sizeof *job);
    char *name = strdup(database);
    if (!job || !name) {
        free(job);
        free(name);
        return MR_NO_MEMORY;
    }
    *job = (struct mr_write){.numbered = numbered, .database = name, .function_ids = function_ids, .files = files,
                             .runtime = runtime, .runtimes = runtimes};
    pthread_mutex_init(&job->lock, NULL);
    pthread_cond_init(&job->keys_ready, NULL);
    job->threaded = pthread_create(&job->thread, NULL, writing, job) == 0;
    job->keys_made = path_keys_make(numbered, function_ids, function_rank, &job->keys);
    pthread_mutex_lock(&job->lock);
    job->keys_done = true;
    pthread_cond_signal(&job->keys_ready);
    pthread_mutex_unlock(&job->lock);
    *out = job;
    return MR_OK;
}

int mr_write_finish(struct mr_write *job, char *error, size_t error_size)
{
    if (job->threaded)
        pthread_join(job->thread, NULL);
    else
        write_tables(job); /* no thread to be had: the write is the caller's */
    int status = job->status;
    if (status == MR_DATABASE)
        snprintf(error, error_size, "%s", job->error);
    path_keys_free(&job->keys);
    pthread_cond_destroy(&job->keys_ready);
    pthread_mutex_destroy(&job->lock);
    free(job->database);
    free(job);
    return status;
}
