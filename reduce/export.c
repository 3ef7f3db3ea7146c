/* mprof export's walks (export.h): the path tables read from the report's
 * database, then a pprof profile's samples, locations and functions
 * encoded, or collapsed stacks written, with no Python object a node. */
#include "export.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "grow.h"
#include "index.h"

#define NONE UINT32_MAX
/* Entry numbers fit an index slot's 32 bits, NONE apart. */
#define LIMIT (UINT32_MAX - 2)

/* paths, in PathTree.rows()'s order. */
struct paths {
    size_t count;
    int64_t *node; /* its innermost node's index, -1: no chain */
    int64_t *rowid;
    uint8_t *runtime;
    uint8_t *counted;
    int64_t *values; /* width a path */
};

static void free_paths(struct paths *paths)
{
    free(paths->node);
    free(paths->rowid);
    free(paths->runtime);
    free(paths->counted);
    free(paths->values);
}

static int read_paths(sqlite3 *db, const struct pr_nodes *nodes, const struct pr_measures *measures,
                      struct paths *paths)
{
    struct pr_row *rows;
    size_t count;
    int status = pr_read(db, measures, &rows, &count);
    unsigned width = measures->width;
    if (status == MR_OK &&
        (!resize(&paths->node, count, sizeof(int64_t)) || !resize(&paths->rowid, count, sizeof(int64_t)) ||
         !resize(&paths->runtime, count, 1) || !resize(&paths->counted, count, 1) ||
         !resize(&paths->values, count, width * sizeof(int64_t))))
        status = MR_NO_MEMORY;
    size_t next_suppressed = 0;
    for (size_t path = 0; status == MR_OK && path < count; path++) {
        const struct pr_row *row = &rows[path];
        paths->node[path] = row->node == PR_NO_NODE ? -1 : pr_node_index(nodes, row->node);
        if (row->node != PR_NO_NODE && paths->node[path] < 0) {
            status = MR_CORRUPT;
            break;
        }
        paths->rowid[path] = row->rowid;
        paths->runtime[path] = row->runtime;
        int64_t *values = paths->values + path * width;
        status = pr_figures(measures, row, path, &next_suppressed, values);
        bool counted = false;
        for (unsigned m = 0; m < width; m++)
            counted |= values[m] != 0;
        paths->counted[path] = counted;
        paths->count++;
    }
    free(rows);
    return status;
}

/* Opens the caller's copy of a database where it lies, and reads its
 * paths and, nodes not NULL, their nodes. */
static int read_tables(const void *database, size_t database_size, const struct pr_measures *measures,
                       struct pr_nodes *nodes, struct paths *paths, char *error, size_t error_size)
{
    if (!measures->values && (!measures->coefficients || !measures->gates))
        return MR_CORRUPT;
    sqlite3 *db;
    int status = pr_open(database, database_size, &db, error, error_size);
    if (status != MR_OK)
        return status;
    status = pr_read_nodes(db, nodes);
    if (status == MR_OK)
        status = read_paths(db, nodes, measures, paths);
    if (status == MR_DATABASE)
        snprintf(error, error_size, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
    return status;
}

/* Bytes as protobuf lays them out. */
struct bytes {
    uint8_t *data;
    size_t size, capacity;
};

static bool room(struct bytes *bytes, size_t more)
{
    if (bytes->size + more <= bytes->capacity)
        return true;
    size_t capacity = bytes->capacity ? bytes->capacity : 4096;
    while (capacity < bytes->size + more)
        capacity *= 2;
    uint8_t *data = realloc(bytes->data, capacity);
    if (!data)
        return false;
    bytes->data = data;
    bytes->capacity = capacity;
    return true;
}

static size_t varint_size(uint64_t value)
{
    size_t size = 1;
    while (value >= 0x80) {
        value >>= 7;
        size++;
    }
    return size;
}

/* With room made for it (10 bytes at most). */
static void put_varint(struct bytes *bytes, uint64_t value)
{
    while (value >= 0x80) {
        bytes->data[bytes->size++] = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    bytes->data[bytes->size++] = (uint8_t)value;
}

enum { VARINT = 0, LENGTH = 2 };

static uint64_t tag(unsigned field, unsigned wire)
{
    return (uint64_t)field << 3 | wire;
}

/* A scalar field's size; proto3 leaves out a 0. */
static size_t scalar_size(unsigned field, uint64_t value)
{
    return value ? varint_size(tag(field, VARINT)) + varint_size(value) : 0;
}

static void put_scalar(struct bytes *bytes, unsigned field, uint64_t value)
{
    if (value) {
        put_varint(bytes, tag(field, VARINT));
        put_varint(bytes, value);
    }
}

static void put_header(struct bytes *bytes, unsigned field, size_t size)
{
    put_varint(bytes, tag(field, LENGTH));
    put_varint(bytes, size);
}

/* profile.proto's field numbers. */
enum { PROFILE_SAMPLE = 2, PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5 };
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3 };
enum { LABEL_KEY = 1, LABEL_STR = 2 };
enum { LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_LINE = 4 };
enum { LINE_FUNCTION_ID = 1, LINE_LINE = 2 };
enum { FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4, FUNCTION_START_LINE = 5 };

/* What ex_pprof_encode needs of the walk. */
struct walk {
    struct pr_nodes nodes;
    struct paths paths;
    unsigned width;
    uint32_t *location;      /* a node's location id, where a machine frame starts at it; 0: not reached */
    uint32_t *next;          /* the node where the frame above starts; NONE: none */
    uint32_t no_chain;       /* the location id of no chain; 0: none */
    int64_t *function_id;    /* each pprof function's id in the profile (by pprof id - 1) */
    size_t function_capacity;
    struct entry_index functions;
    uint64_t *line_start;    /* location id - 1 -> where its lines start in line_function and line_number */
    size_t location_capacity;
    uint64_t *line_function; /* pprof function ids */
    int64_t *line_number;
    size_t line_count, line_capacity;
    struct entry_index locations;
    size_t event_capacity;
};

static bool add_event(struct ex_pprof *pprof, struct walk *walk, uint8_t kind, int64_t function, size_t path)
{
    size_t n = pprof->event_count;
    if (n == walk->event_capacity) {
        walk->event_capacity = n ? 2 * n : 1024;
        if (!resize(&pprof->event_kind, walk->event_capacity, 1) ||
            !resize(&pprof->event_function, walk->event_capacity, sizeof(int64_t)) ||
            !resize(&pprof->event_path, walk->event_capacity, sizeof(uint64_t)))
            return false;
    }
    pprof->event_kind[n] = kind;
    pprof->event_function[n] = function;
    pprof->event_path[n] = path;
    pprof->event_count++;
    return true;
}

/* A new pprof function; id, the profile's, or INT64_MIN for no chain's. */
static int new_function(struct ex_pprof *pprof, struct walk *walk, int64_t id, size_t path, uint64_t *pprof_id)
{
    size_t n = pprof->function_count;
    if (n >= LIMIT || !grow((void **)&walk->function_id, &walk->function_capacity, n, sizeof(int64_t)) ||
        !add_event(pprof, walk, id == INT64_MIN ? EX_NO_CHAIN : EX_FUNCTION, id, path))
        return MR_NO_MEMORY;
    walk->function_id[n] = id;
    pprof->function_count++;
    *pprof_id = n + 1;
    return MR_OK;
}

static int function_of(struct ex_pprof *pprof, struct walk *walk, int64_t id, size_t path, uint64_t *pprof_id)
{
    uint64_t hash = mix((uint64_t)id);
    size_t slot;
    bool found;
    ENTRY_INDEX_FIND(&walk->functions, hash, candidate, walk->function_id[candidate] == id, slot, found);
    if (found) {
        *pprof_id = ENTRY_INDEX_AT(&walk->functions, slot) + 1;
        return MR_OK;
    }
    int status = new_function(pprof, walk, id, path, pprof_id);
    if (status == MR_OK && !entry_index_add(&walk->functions, slot, hash, *pprof_id - 1))
        status = MR_NO_MEMORY;
    return status;
}

/* A new location of the lines from first on; its id. */
static int new_location(struct ex_pprof *pprof, struct walk *walk, size_t first, uint32_t *id)
{
    size_t n = pprof->location_count;
    if (n >= LIMIT || !grow((void **)&walk->line_start, &walk->location_capacity, n + 1, sizeof(uint64_t)))
        return MR_NO_MEMORY;
    walk->line_start[n] = first;
    walk->line_start[n + 1] = walk->line_count;
    pprof->location_count++;
    *id = (uint32_t)(n + 1);
    return MR_OK;
}

static bool same_lines(const struct walk *walk, uint64_t location, size_t first)
{
    size_t start = walk->line_start[location], count = walk->line_start[location + 1] - start;
    return count == walk->line_count - first &&
           !memcmp(walk->line_function + start, walk->line_function + first, count * sizeof(uint64_t)) &&
           !memcmp(walk->line_number + start, walk->line_number + first, count * sizeof(int64_t));
}

/* The location of the machine frame that starts at node: its function
 * and those inlined into it, innermost first.  *above, where the frame
 * above starts, -1: none. */
static int location_of(struct ex_pprof *pprof, struct walk *walk, int64_t node, size_t path, uint32_t *id,
                       int64_t *above)
{
    const struct pr_nodes *nodes = &walk->nodes;
    size_t first = walk->line_count;
    uint64_t hash = 0x9e3779b97f4a7c15ULL;
    int64_t at = node, outermost;
    bool inlined;
    do {
        uint64_t function;
        int status = function_of(pprof, walk, nodes->function[at], path, &function);
        if (status != MR_OK)
            return status;
        if (walk->line_count == walk->line_capacity) {
            walk->line_capacity = walk->line_capacity ? 2 * walk->line_capacity : 1024;
            if (!resize(&walk->line_function, walk->line_capacity, sizeof(uint64_t)) ||
                !resize(&walk->line_number, walk->line_capacity, sizeof(int64_t)))
                return MR_NO_MEMORY;
        }
        walk->line_function[walk->line_count] = function;
        walk->line_number[walk->line_count++] = nodes->line[at];
        hash = mix(hash ^ function) ^ mix((uint64_t)nodes->line[at] + 0x51);
        inlined = nodes->inlined[at];
        outermost = at;
        at = nodes->parent[at];
    } while (inlined && at >= 0);
    *above = at;
    size_t slot;
    bool found;
    ENTRY_INDEX_FIND(&walk->locations, hash, candidate, same_lines(walk, candidate, first), slot, found);
    if (found) {
        walk->line_count = first;
        *id = (uint32_t)ENTRY_INDEX_AT(&walk->locations, slot) + 1;
        return MR_OK;
    }
    int status = new_location(pprof, walk, first, id);
    if (status != MR_OK)
        return status;
    if (!entry_index_add(&walk->locations, slot, hash, *id - 1) ||
        !add_event(pprof, walk, EX_LOCATION, nodes->function[outermost], path))
        return MR_NO_MEMORY;
    return MR_OK;
}

/* The no chain location, made when a path of no chain is first counted. */
static int no_chain(struct ex_pprof *pprof, struct walk *walk, size_t path)
{
    uint64_t function;
    int status = new_function(pprof, walk, INT64_MIN, path, &function);
    if (status != MR_OK)
        return status;
    if (walk->line_count == walk->line_capacity) {
        walk->line_capacity = walk->line_capacity ? 2 * walk->line_capacity : 1024;
        if (!resize(&walk->line_function, walk->line_capacity, sizeof(uint64_t)) ||
            !resize(&walk->line_number, walk->line_capacity, sizeof(int64_t)))
            return MR_NO_MEMORY;
    }
    size_t first = walk->line_count;
    walk->line_function[walk->line_count] = function;
    walk->line_number[walk->line_count++] = 0;
    /* Not in the index: no frame's lines are its. */
    return new_location(pprof, walk, first, &walk->no_chain);
}

/* The locations of the path that ends at node, from its innermost
 * machine frame up to the first frame an earlier path reached. */
static int walk_path(struct ex_pprof *pprof, struct walk *walk, int64_t node, size_t path)
{
    while (node >= 0 && !walk->location[node]) {
        int64_t above;
        int status = location_of(pprof, walk, node, path, &walk->location[node], &above);
        if (status != MR_OK)
            return status;
        walk->next[node] = above < 0 ? NONE : (uint32_t)above;
        node = above;
    }
    return MR_OK;
}

static void free_walk(struct walk *walk)
{
    if (!walk)
        return;
    pr_nodes_free(&walk->nodes);
    free_paths(&walk->paths);
    free(walk->location);
    free(walk->next);
    free(walk->function_id);
    entry_index_free(&walk->functions);
    free(walk->line_start);
    free(walk->line_function);
    free(walk->line_number);
    entry_index_free(&walk->locations);
    free(walk);
}

void ex_pprof_free(struct ex_pprof *pprof)
{
    if (!pprof)
        return;
    free(pprof->event_kind);
    free(pprof->event_function);
    free(pprof->event_path);
    free(pprof->runtime_path);
    free(pprof->runtime_rowid);
    free(pprof->bytes);
    free_walk(pprof->walk);
    free(pprof);
}

int ex_pprof_walk(const void *database, size_t database_size, const struct pr_measures *measures,
                  struct ex_pprof **out, char *error, size_t error_size)
{
    *out = NULL;
    struct ex_pprof *pprof = calloc(1, sizeof *pprof);
    struct walk *walk = calloc(1, sizeof *walk);
    if (!pprof || !walk) {
        free(pprof);
        free(walk);
        return MR_NO_MEMORY;
    }
    pprof->walk = walk;
    walk->width = measures->width;
    int status = read_tables(database, database_size, measures, &walk->nodes, &walk->paths, error, error_size);
    size_t count = walk->nodes.count;
    if (status == MR_OK &&
        (!(walk->location = calloc(count + 1, sizeof(uint32_t))) || !(walk->next = malloc((count + 1) * 4)) ||
         !entry_index_init(&walk->functions) || !entry_index_init(&walk->locations)))
        status = MR_NO_MEMORY;
    const struct paths *paths = &walk->paths;
    size_t runtime_capacity = 0;
    for (size_t path = 0; status == MR_OK && path < paths->count; path++) {
        if (!paths->counted[path])
            continue;
        if (paths->node[path] < 0 && !walk->no_chain)
            status = no_chain(pprof, walk, path);
        if (status == MR_OK)
            status = walk_path(pprof, walk, paths->node[path], path);
        if (status == MR_OK && paths->runtime[path]) {
            size_t n = pprof->runtime_count, capacity = runtime_capacity;
            if (!grow((void **)&pprof->runtime_path, &capacity, n, sizeof(uint64_t)) ||
                !grow((void **)&pprof->runtime_rowid, &runtime_capacity, n, sizeof(int64_t))) {
                status = MR_NO_MEMORY;
                break;
            }
            pprof->runtime_path[n] = path;
            pprof->runtime_rowid[n] = paths->rowid[path];
            pprof->runtime_count++;
        }
    }
    if (status != MR_OK) {
        ex_pprof_free(pprof);
        return status;
    }
    pprof->path_count = paths->count;
    pprof->counted = paths->counted;
    *out = pprof;
    return MR_OK;
}

/* The location ids of a counted path, innermost first: each frame's, then
 * the frame above it. */
#define FOR_LOCATIONS(walk, path, id, ...)                                                        \
    do {                                                                                          \
        int64_t node_ = (walk)->paths.node[path];                                                 \
        if (node_ < 0) {                                                                          \
            uint64_t id = (walk)->no_chain;                                                       \
            __VA_ARGS__;                                                                          \
        }                                                                                         \
        for (uint32_t at_ = node_ < 0 ? NONE : (uint32_t)node_; at_ != NONE; at_ = (walk)->next[at_]) { \
            uint64_t id = (walk)->location[at_];                                                  \
            __VA_ARGS__;                                                                          \
        }                                                                                         \
    } while (0)

static size_t label_body(int64_t key, int64_t value)
{
    return scalar_size(LABEL_KEY, (uint64_t)key) + scalar_size(LABEL_STR, (uint64_t)value);
}

static size_t field_size(unsigned field, size_t body)
{
    return varint_size(tag(field, LENGTH)) + varint_size(body) + body;
}

static int encode_samples(const struct walk *walk, struct bytes *bytes, const uint64_t *label_path,
                          const int64_t *label_key, const int64_t *label_value, size_t label_count)
{
    const struct paths *paths = &walk->paths;
    unsigned width = walk->width;
    size_t label = 0;
    for (size_t path = 0; path < paths->count; path++) {
        if (!paths->counted[path])
            continue;
        size_t ids = 0;
        FOR_LOCATIONS(walk, path, id, ids += varint_size(id));
        const int64_t *values = paths->values + path * width;
        size_t figures = 0;
        for (unsigned m = 0; m < width; m++)
            figures += varint_size((uint64_t)values[m]);
        while (label < label_count && label_path[label] < path)
            label++;
        size_t labels = 0, first_label = label;
        for (size_t l = label; l < label_count && label_path[l] == path; l++)
            labels += field_size(SAMPLE_LABEL, label_body(label_key[l], label_value[l]));
        size_t size = labels;
        if (ids)
            size += field_size(SAMPLE_LOCATION_ID, ids);
        if (width)
            size += field_size(SAMPLE_VALUE, figures);
        if (!room(bytes, 2 * 10 + size))
            return MR_NO_MEMORY;
        put_header(bytes, PROFILE_SAMPLE, size);
        if (ids) {
            put_header(bytes, SAMPLE_LOCATION_ID, ids);
            FOR_LOCATIONS(walk, path, id, put_varint(bytes, id));
        }
        if (width) {
            put_header(bytes, SAMPLE_VALUE, figures);
            for (unsigned m = 0; m < width; m++)
                put_varint(bytes, (uint64_t)values[m]);
        }
        for (label = first_label; label < label_count && label_path[label] == path; label++) {
            put_header(bytes, SAMPLE_LABEL, label_body(label_key[label], label_value[label]));
            put_scalar(bytes, LABEL_KEY, (uint64_t)label_key[label]);
            put_scalar(bytes, LABEL_STR, (uint64_t)label_value[label]);
        }
    }
    return MR_OK;
}

static int encode_locations(const struct walk *walk, size_t count, const uint64_t *mapping, struct bytes *bytes)
{
    for (size_t location = 0; location < count; location++) {
        size_t start = walk->line_start[location], end = walk->line_start[location + 1];
        size_t size = scalar_size(LOCATION_ID, location + 1) + scalar_size(LOCATION_MAPPING_ID, mapping[location]);
        for (size_t line = start; line < end; line++)
            size += field_size(LOCATION_LINE, scalar_size(LINE_FUNCTION_ID, walk->line_function[line]) +
                                                  scalar_size(LINE_LINE, (uint64_t)walk->line_number[line]));
        if (!room(bytes, 20 + size))
            return MR_NO_MEMORY;
        put_header(bytes, PROFILE_LOCATION, size);
        put_scalar(bytes, LOCATION_ID, location + 1);
        put_scalar(bytes, LOCATION_MAPPING_ID, mapping[location]);
        for (size_t line = start; line < end; line++) {
            put_header(bytes, LOCATION_LINE, scalar_size(LINE_FUNCTION_ID, walk->line_function[line]) +
                                                 scalar_size(LINE_LINE, (uint64_t)walk->line_number[line]));
            put_scalar(bytes, LINE_FUNCTION_ID, walk->line_function[line]);
            put_scalar(bytes, LINE_LINE, (uint64_t)walk->line_number[line]);
        }
    }
    return MR_OK;
}

static int encode_functions(size_t count, const int64_t *name, const int64_t *system_name, const int64_t *filename,
                            const int64_t *start_line, struct bytes *bytes)
{
    for (size_t function = 0; function < count; function++) {
        size_t size = scalar_size(FUNCTION_ID, function + 1) + scalar_size(FUNCTION_NAME, (uint64_t)name[function]) +
                      scalar_size(FUNCTION_SYSTEM_NAME, (uint64_t)system_name[function]) +
                      scalar_size(FUNCTION_FILENAME, (uint64_t)filename[function]) +
                      scalar_size(FUNCTION_START_LINE, (uint64_t)start_line[function]);
        if (!room(bytes, 20 + size))
            return MR_NO_MEMORY;
        put_header(bytes, PROFILE_FUNCTION, size);
        put_scalar(bytes, FUNCTION_ID, function + 1);
        put_scalar(bytes, FUNCTION_NAME, (uint64_t)name[function]);
        put_scalar(bytes, FUNCTION_SYSTEM_NAME, (uint64_t)system_name[function]);
        put_scalar(bytes, FUNCTION_FILENAME, (uint64_t)filename[function]);
        put_scalar(bytes, FUNCTION_START_LINE, (uint64_t)start_line[function]);
    }
    return MR_OK;
}

int ex_pprof_encode(struct ex_pprof *pprof, const int64_t *name, const int64_t *system_name, const int64_t *filename,
                    const int64_t *start_line, const uint64_t *mapping, const uint64_t *label_path,
                    const int64_t *label_key, const int64_t *label_value, size_t label_count)
{
    const struct walk *walk = pprof->walk;
    free(pprof->bytes);
    struct bytes bytes = {NULL, 0, 0};
    int status = encode_samples(walk, &bytes, label_path, label_key, label_value, label_count);
    pprof->locations_at = bytes.size;
    if (status == MR_OK)
        status = encode_locations(walk, pprof->location_count, mapping, &bytes);
    pprof->functions_at = bytes.size;
    if (status == MR_OK)
        status = encode_functions(pprof->function_count, name, system_name, filename, start_line, &bytes);
    pprof->bytes = bytes.data;
    pprof->size = bytes.size;
    return status;
}

/* The collapsed stacks' tree: a node for each list of names of a counted
 * path's frames, outermost first (paths whose frames differ only in lines,
 * or in functions of one name, are one), by the place of its name. */
struct stacks {
    size_t count, capacity;
    uint32_t *parent; /* NONE: an outermost frame */
    uint32_t *name;
    int64_t *sum;     /* of the counted paths that end at it */
    uint8_t *ends;    /* whether a counted path ends at it */
    struct entry_index index;
};

static uint64_t stack_hash(uint32_t parent, uint32_t name)
{
    return mix((uint64_t)parent << 32 | name);
}

static int stack_of(struct stacks *stacks, uint32_t parent, uint32_t name, uint32_t *out)
{
    uint64_t hash = stack_hash(parent, name);
    size_t slot;
    bool found;
    ENTRY_INDEX_FIND(&stacks->index, hash, candidate,
                     stacks->parent[candidate] == parent && stacks->name[candidate] == name, slot, found);
    if (found) {
        *out = (uint32_t)ENTRY_INDEX_AT(&stacks->index, slot);
        return MR_OK;
    }
    size_t n = stacks->count;
    if (n == stacks->capacity) {
        stacks->capacity = n ? 2 * n : 1024;
        if (n >= LIMIT || !resize(&stacks->parent, stacks->capacity, sizeof(uint32_t)) ||
            !resize(&stacks->name, stacks->capacity, sizeof(uint32_t)) ||
            !resize(&stacks->sum, stacks->capacity, sizeof(int64_t)) || !resize(&stacks->ends, stacks->capacity, 1))
            return MR_NO_MEMORY;
    }
    if (!entry_index_add(&stacks->index, slot, hash, n))
        return MR_NO_MEMORY;
    stacks->parent[n] = parent;
    stacks->name[n] = name;
    stacks->sum[n] = 0;
    stacks->ends[n] = 0;
    stacks->count++;
    *out = (uint32_t)n;
    return MR_OK;
}

static void free_stacks(struct stacks *stacks)
{
    free(stacks->parent);
    free(stacks->name);
    free(stacks->sum);
    free(stacks->ends);
    entry_index_free(&stacks->index);
}

/* The names, as ex_collapsed takes them. */
struct names {
    const char *bytes;
    const uint64_t *end;
    size_t count;
};

static const char *name_at(const struct names *names, uint32_t name, size_t *size)
{
    uint64_t start = name ? names->end[name - 1] : 0;
    *size = (size_t)(names->end[name] - start);
    return names->bytes + start;
}

/* A stack's line ("a;b c"), or the first byte of its stacks below ("a;b;"):
 * each sibling's lines come in one run, ordered as these keys are. */
struct item {
    uint32_t stack;
    uint32_t below; /* 0: its line; 1: the stacks below it */
};

static int by_key(const void *a, const void *b, void *context)
{
    const struct item *x = a, *y = b;
    const struct stacks *stacks = ((const void **)context)[0];
    const struct names *names = ((const void **)context)[1];
    size_t x_size, y_size;
    const char *x_name = name_at(names, stacks->name[x->stack], &x_size);
    const char *y_name = name_at(names, stacks->name[y->stack], &y_size);
    int order = memcmp(x_name, y_name, x_size < y_size ? x_size : y_size);
    if (order)
        return order;
    if (x_size == y_size)
        return (int)x->below - (int)y->below;
    /* One name starts the other: the shorter's key goes on with ';' or
     * ends, the longer's with a byte of its name, never ';'. */
    if (x_size < y_size)
        return x->below ? ';' - (unsigned char)y_name[x_size] : -1;
    return y->below ? (unsigned char)x_name[y_size] - ';' : 1;
}

static bool append(struct bytes *text, const void *data, size_t size)
{
    if (!room(text, size))
        return false;
    memcpy(text->data + text->size, data, size);
    text->size += size;
    return true;
}

static bool append_count(struct bytes *text, int64_t count)
{
    char digits[24];
    size_t at = sizeof digits;
    uint64_t magnitude = count < 0 ? -(uint64_t)count : (uint64_t)count;
    digits[--at] = '\n';
    do {
        digits[--at] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (count < 0)
        digits[--at] = '-';
    digits[--at] = ' ';
    return append(text, digits + at, sizeof digits - at);
}

/* The lines of every stack, a depth-first walk of each node's items in
 * their keys' order. */
static int write_stacks(const struct stacks *stacks, const struct names *names, struct bytes *text)
{
    size_t count = stacks->count;
    /* Items by parent (NONE first), in the order of their keys. */
    uint64_t *start = calloc(count + 2, sizeof(uint64_t));
    struct item *items = malloc((2 * count + 1) * sizeof *items);
    /* The walk: the items still to write at each depth, and the length of the line's start there. */
    uint64_t *next = malloc((count + 1) * sizeof(uint64_t));
    uint64_t *stop = malloc((count + 1) * sizeof(uint64_t));
    size_t *prefix = malloc((count + 1) * sizeof(size_t));
    struct bytes line = {NULL, 0, 0};
    int status = MR_OK;
    if (!start || !items || !next || !stop || !prefix) {
        status = MR_NO_MEMORY;
        goto done;
    }
    uint32_t *children = malloc((count + 1) * sizeof(uint32_t));
    uint64_t *child_start = calloc(count + 2, sizeof(uint64_t));
    if (!children || !child_start) {
        free(children);
        free(child_start);
        status = MR_NO_MEMORY;
        goto done;
    }
    for (size_t n = 0; n < count; n++)
        child_start[stacks->parent[n] == NONE ? 0 : stacks->parent[n] + 1]++;
    for (size_t n = 0, sum = 0; n <= count; n++) {
        size_t here = child_start[n];
        child_start[n] = sum;
        sum += here;
    }
    child_start[count + 1] = count;
    {
        uint64_t *fill = malloc((count + 1) * sizeof(uint64_t));
        if (!fill) {
            free(children);
            free(child_start);
            status = MR_NO_MEMORY;
            goto done;
        }
        memcpy(fill, child_start, (count + 1) * sizeof(uint64_t));
        for (size_t n = 0; n < count; n++)
            children[fill[stacks->parent[n] == NONE ? 0 : stacks->parent[n] + 1]++] = (uint32_t)n;
        free(fill);
    }
    /* A stack's items: its line where a counted path ends at it, and the
     * stacks below where it has any. */
    size_t item_count = 0;
    for (size_t parent = 0; parent <= count; parent++) {
        start[parent] = item_count;
        for (uint64_t c = child_start[parent]; c < child_start[parent + 1]; c++) {
            uint32_t child = children[c];
            if (stacks->ends[child])
                items[item_count++] = (struct item){child, 0};
            if (child_start[child + 1] < child_start[child + 2])
                items[item_count++] = (struct item){child, 1};
        }
        const void *context[2] = {stacks, names};
        qsort_r(items + start[parent], item_count - start[parent], sizeof *items, by_key, context);
    }
    start[count + 1] = item_count;
    free(children);
    free(child_start);

    size_t depth = 0;
    next[0] = start[0];
    stop[0] = start[1];
    prefix[0] = 0;
    while (status == MR_OK) {
        if (next[depth] == stop[depth]) {
            if (!depth--)
                break;
            continue;
        }
        struct item item = items[next[depth]++];
        size_t size;
        const char *name = name_at(names, stacks->name[item.stack], &size);
        line.size = prefix[depth];
        if (!append(&line, name, size)) {
            status = MR_NO_MEMORY;
        } else if (!item.below) {
            if (!append(text, line.data, line.size) || !append_count(text, stacks->sum[item.stack]))
                status = MR_NO_MEMORY;
        } else if (!append(&line, ";", 1)) {
            status = MR_NO_MEMORY;
        } else {
            depth++;
            next[depth] = start[item.stack + 1];
            stop[depth] = start[item.stack + 2];
            prefix[depth] = line.size;
        }
    }
done:
    free(start);
    free(items);
    free(next);
    free(stop);
    free(prefix);
    free(line.data);
    return status;
}

/* Each function's name, as a place in function_ids and their names. */
static uint32_t name_of_function(const int64_t *function_ids, const uint32_t *name_of, size_t count, int64_t id)
{
    size_t low = 0, high = count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (function_ids[middle] < id)
            low = middle + 1;
        else
            high = middle;
    }
    return low < count && function_ids[low] == id ? name_of[low] : NONE;
}

int ex_collapsed(const void *database, size_t database_size, const struct pr_measures *measures,
                 const int64_t *function_ids, const uint32_t *name_of, size_t function_count, const char *names,
                 const uint64_t *name_end, size_t name_count, uint32_t no_chain, char **out, size_t *size,
                 char *error, size_t error_size)
{
    *out = NULL;
    *size = 0;
    if (measures->width != 1 || no_chain >= name_count)
        return MR_CORRUPT;
    struct pr_nodes nodes = {0};
    struct paths paths = {0};
    struct stacks stacks = {0};
    uint32_t *stack = NULL, *walked = NULL;
    struct bytes text = {NULL, 0, 0};
    int status = read_tables(database, database_size, measures, &nodes, &paths, error, error_size);
    /* Each node's stack, NONE until a path reaches it; walked, the nodes
     * on the way up to one known. */
    if (status == MR_OK && (!(stack = malloc((nodes.count + 1) * sizeof(uint32_t))) ||
                            !(walked = malloc((nodes.count + 1) * sizeof(uint32_t))) ||
                            !entry_index_init(&stacks.index)))
        status = MR_NO_MEMORY;
    for (size_t n = 0; status == MR_OK && n < nodes.count; n++) {
        stack[n] = NONE;
        /* A name for every node's function: a profile's functions are all named. */
        if (name_of_function(function_ids, name_of, function_count, nodes.function[n]) >= name_count)
            status = MR_CORRUPT;
    }
    for (size_t path = 0; status == MR_OK && path < paths.count; path++) {
        if (!paths.counted[path])
            continue;
        uint32_t at;
        int64_t node = paths.node[path];
        if (node < 0) {
            status = stack_of(&stacks, NONE, no_chain, &at);
        } else {
            size_t count = 0;
            for (int64_t up = node; up >= 0 && stack[up] == NONE; up = nodes.parent[up])
                walked[count++] = (uint32_t)up;
            while (status == MR_OK && count--) {
                uint32_t n = walked[count];
                int64_t parent = nodes.parent[n];
                status = stack_of(&stacks, parent < 0 ? NONE : stack[parent],
                                  name_of_function(function_ids, name_of, function_count, nodes.function[n]),
                                  &stack[n]);
            }
            at = stack[node];
        }
        if (status != MR_OK)
            break;
        if (__builtin_add_overflow(stacks.sum[at], paths.values[path], &stacks.sum[at]))
            status = MR_OVERFLOW;
        stacks.ends[at] = 1;
    }
    struct names named = {names, name_end, name_count};
    for (size_t n = 0; status == MR_OK && n < name_count; n++) {
        size_t length;
        const char *name = name_at(&named, (uint32_t)n, &length);
        if (memchr(name, ';', length) || memchr(name, '\n', length))
            status = MR_CORRUPT;
    }
    if (status == MR_OK)
        status = write_stacks(&stacks, &named, &text);
    pr_nodes_free(&nodes);
    free_paths(&paths);
    free_stacks(&stacks);
    free(stack);
    free(walked);
    if (status != MR_OK) {
        free(text.data);
        return status;
    }
    *out = (char *)text.data;
    *size = text.size;
    return MR_OK;
}

void ex_collapsed_free(char *text)
{
    free(text);
}
