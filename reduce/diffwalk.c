/* mprof diff's walk (diffwalk.h): reads each side's paths and path tree out
 * of its database, numbers their chains of function keys in one trie that
 * both sides share, and sums the counted paths into the rows of the four
 * views, each row made where a walk of the base's paths, then the new's,
 * first meets it. */
#include "diffwalk.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "grow.h"
#include "index.h"

/* A row, site, chain or node number that is not one. */
#define NONE DW_NONE
/* A node whose parent id is no node's: no walk from the outermost nodes reaches it. */
#define MISSING (UINT32_MAX - 1)
/* Numbers stay below this, so that NONE and MISSING are never one. */
#define LIMIT (UINT32_MAX - 2)

struct view {
    struct dw_view rows;
    size_t capacity;
    uint32_t *row_of; /* each identity's row + 1; 0: none yet */
    size_t row_of_size;
};

/* A side's tree, kept for dw_chains. */
struct side {
    size_t node_count;
    int64_t *id; /* ascending */
    uint32_t *parent; /* its index; NONE: an outermost node; MISSING */
    int64_t *function;
};

/* A chain of function keys: the key called from its parent chain's
 * innermost function, and a hash of its keys, outermost first, that its
 * parent's hash and its key make without looking anything up. */
struct chain {
    uint64_t hash;
    uint32_t parent;
    uint32_t key;
};

#define EMPTY_CHAIN_HASH 0x6a09e667f3bcc908ULL

static uint64_t chain_hash(uint64_t parent_hash, uint32_t key)
{
    return mix(parent_hash ^ (((uint64_t)key + 1) * 0x9e3779b97f4a7c15ULL));
}

struct dw_compare {
    unsigned width;
    uint32_t key_count;
    /* The trie of chains: chain 0 is the empty one. */
    size_t chain_count, chain_capacity;
    struct chain *chain;
    struct entry_index chains;
    /* Sites: the innermost function's key, a file name's number, a line. */
    size_t site_count, site_capacity;
    uint32_t *site_key;
    uint32_t *site_file;
    int64_t *site_line;
    struct entry_index sites;
    /* File names (what follows a file's last /), their bytes end to end. */
    size_t file_count, file_capacity, byte_count, byte_capacity;
    uint64_t *file_end;
    char *file_bytes;
    struct entry_index files;
    struct view views[DW_KINDS];
    int64_t *totals[2];
    struct side sides[2];
};

/* One side's paths, in paths ORDER BY node_id, and what the walk finds of
 * its counted ones. */
struct paths {
    size_t count, capacity;
    int64_t *node;    /* DW_NO_NODE: no caller */
    int64_t *values;  /* width a path */
    uint8_t *counted; /* a figure is not 0 */
    uint32_t *at;     /* its node's index; NONE: none */
    uint32_t *file;
    int64_t *line;
};

static size_t doubled(size_t capacity)
{
    return capacity ? capacity * 2 : 1024;
}

static bool add_checked(int64_t *sum, int64_t value)
{
    return !__builtin_add_overflow(*sum, value, sum);
}

static bool add_all(int64_t *sums, const int64_t *values, unsigned width)
{
    bool fits = true;
    for (unsigned f = 0; f < width; f++)
        fits &= add_checked(&sums[f], values[f]);
    return fits;
}

struct dw_compare *dw_new(unsigned width, uint32_t key_count)
{
    struct dw_compare *compare = calloc(1, sizeof *compare);
    if (!compare)
        return NULL;
    compare->width = width;
    compare->key_count = key_count;
    compare->chain_capacity = 1024;
    /* Chain 0, the empty chain: the path of no caller. */
    compare->chain_count = 1;
    if (!entry_index_init(&compare->chains) || !entry_index_init(&compare->sites) ||
        !entry_index_init(&compare->files) || !(compare->totals[0] = calloc(width + 1, sizeof(int64_t))) ||
        !(compare->totals[1] = calloc(width + 1, sizeof(int64_t))) ||
        !(compare->chain = calloc(compare->chain_capacity, sizeof(struct chain)))) {
        dw_free(compare);
        return NULL;
    }
    compare->chain[0] = (struct chain){EMPTY_CHAIN_HASH, NONE, 0};
    return compare;
}

void dw_free(struct dw_compare *compare)
{
    if (!compare)
        return;
    free(compare->chain);
    entry_index_free(&compare->chains);
    free(compare->site_key);
    free(compare->site_file);
    free(compare->site_line);
    entry_index_free(&compare->sites);
    free(compare->file_end);
    free(compare->file_bytes);
    entry_index_free(&compare->files);
    for (int kind = 0; kind < DW_KINDS; kind++) {
        struct view *view = &compare->views[kind];
        for (int side = 0; side < 2; side++) {
            free(view->rows.figures[side]);
            free(view->rows.node[side]);
            free(view->rows.seen[side]);
        }
        free(view->rows.identity);
        free(view->row_of);
    }
    for (int side = 0; side < 2; side++) {
        free(compare->totals[side]);
        free(compare->sides[side].id);
        free(compare->sides[side].parent);
        free(compare->sides[side].function);
    }
    free(compare);
}

/* The chain of key called from chain parent's innermost function, whose
 * hash is hash: found, or made. */
static int chain_of(struct dw_compare *compare, uint32_t parent, uint32_t key, uint64_t hash, uint32_t *out)
{
    size_t slot;
    bool found;
    const struct chain *chains = compare->chain;
    ENTRY_INDEX_FIND(&compare->chains, hash, candidate,
                     chains[candidate].hash == hash && chains[candidate].parent == parent &&
                         chains[candidate].key == key,
                     slot, found);
    if (found) {
        *out = (uint32_t)ENTRY_INDEX_AT(&compare->chains, slot);
        return MR_OK;
    }
    size_t chain = compare->chain_count;
    if (chain >= LIMIT)
        return MR_NO_MEMORY;
    if (chain == compare->chain_capacity) {
        if (!resize(&compare->chain, doubled(chain), sizeof(struct chain)))
            return MR_NO_MEMORY;
        compare->chain_capacity = doubled(chain);
    }
    compare->chain[chain] = (struct chain){hash, parent, key};
    compare->chain_count++;
    if (!entry_index_add(&compare->chains, slot, hash, chain))
        return MR_NO_MEMORY;
    *out = (uint32_t)chain;
    return MR_OK;
}

/* The number of a file's name: what follows its last /, as
 * os.path.basename takes it. */
static int file_of(struct dw_compare *compare, const char *file, size_t size, uint32_t *out)
{
    const char *name = file;
    for (size_t at = size; at > 0; at--) {
        if (file[at - 1] == '/') {
            name = file + at;
            break;
        }
    }
    size -= (size_t)(name - file);
    uint64_t hash = 14695981039346656037ULL; /* FNV-1a */
    for (size_t at = 0; at < size; at++)
        hash = (hash ^ (unsigned char)name[at]) * 1099511628211ULL;
    hash = mix(hash);
    size_t slot;
    bool found;
#define START(number) ((number) ? compare->file_end[(number) - 1] : 0)
    ENTRY_INDEX_FIND(&compare->files, hash, candidate,
                     compare->file_end[candidate] - START(candidate) == size &&
                         (!size || memcmp(compare->file_bytes + START(candidate), name, size) == 0),
                     slot, found);
#undef START
    if (found) {
        *out = (uint32_t)ENTRY_INDEX_AT(&compare->files, slot);
        return MR_OK;
    }
    size_t number = compare->file_count;
    if (number >= LIMIT)
        return MR_NO_MEMORY;
    if (compare->byte_count + size > compare->byte_capacity) {
        size_t capacity = doubled(compare->byte_capacity);
        while (capacity < compare->byte_count + size)
            capacity *= 2;
        if (!resize(&compare->file_bytes, capacity, 1))
            return MR_NO_MEMORY;
        compare->byte_capacity = capacity;
    }
    if (number == compare->file_capacity) {
        if (!resize(&compare->file_end, doubled(number), sizeof(uint64_t)))
            return MR_NO_MEMORY;
        compare->file_capacity = doubled(number);
    }
    if (size) /* an empty name may come before any bytes were kept */
        memcpy(compare->file_bytes + compare->byte_count, name, size);
    compare->byte_count += size;
    compare->file_end[number] = compare->byte_count;
    compare->file_count++;
    if (!entry_index_add(&compare->files, slot, hash, number))
        return MR_NO_MEMORY;
    *out = (uint32_t)number;
    return MR_OK;
}

static int site_of(struct dw_compare *compare, uint32_t key, uint32_t file, int64_t line, uint32_t *out)
{
    uint64_t hash = mix(mix(((uint64_t)key << 32) | file) ^ (uint64_t)line);
    size_t slot;
    bool found;
    ENTRY_INDEX_FIND(&compare->sites, hash, candidate,
                     compare->site_key[candidate] == key && compare->site_file[candidate] == file &&
                         compare->site_line[candidate] == line,
                     slot, found);
    if (found) {
        *out = (uint32_t)ENTRY_INDEX_AT(&compare->sites, slot);
        return MR_OK;
    }
    size_t site = compare->site_count;
    if (site >= LIMIT)
        return MR_NO_MEMORY;
    if (site == compare->site_capacity) {
        size_t capacity = doubled(site);
        if (!resize(&compare->site_key, capacity, sizeof(uint32_t)) ||
            !resize(&compare->site_file, capacity, sizeof(uint32_t)) ||
            !resize(&compare->site_line, capacity, sizeof(int64_t)))
            return MR_NO_MEMORY;
        compare->site_capacity = capacity;
    }
    compare->site_key[site] = key;
    compare->site_file[site] = file;
    compare->site_line[site] = line;
    compare->site_count++;
    if (!entry_index_add(&compare->sites, slot, hash, site))
        return MR_NO_MEMORY;
    *out = (uint32_t)site;
    return MR_OK;
}

/* Adds a path's figures to the row of identity in a view, made if this is
 * its first; node names the row on this side if it is the base's first or
 * the new's last (as the Python reference's View.add names its rows). */
static int add_row(struct dw_compare *compare, struct view *view, uint32_t identity, unsigned side, int64_t node,
                   const int64_t *values)
{
    unsigned width = compare->width;
    if (identity >= view->row_of_size) {
        size_t size = doubled(view->row_of_size);
        while (size <= identity)
            size *= 2;
        if (!resize(&view->row_of, size, sizeof(uint32_t)))
            return MR_NO_MEMORY;
        memset(view->row_of + view->row_of_size, 0, (size - view->row_of_size) * sizeof(uint32_t));
        view->row_of_size = size;
    }
    struct dw_view *rows = &view->rows;
    size_t row = view->row_of[identity];
    if (row) {
        row--;
    } else {
        row = rows->count;
        if (row >= LIMIT)
            return MR_NO_MEMORY;
        if (row == view->capacity) {
            size_t capacity = doubled(row);
            for (int s = 0; s < 2; s++) {
                if (!resize(&rows->figures[s], capacity, width * sizeof(int64_t)) ||
                    !resize(&rows->node[s], capacity, sizeof(int64_t)) || !resize(&rows->seen[s], capacity, 1))
                    return MR_NO_MEMORY;
            }
            if (!resize(&rows->identity, capacity, sizeof(uint32_t)))
                return MR_NO_MEMORY;
            view->capacity = capacity;
        }
        for (int s = 0; s < 2; s++) {
            memset(rows->figures[s] + row * width, 0, width * sizeof(int64_t));
            rows->node[s][row] = DW_NO_NODE;
            rows->seen[s][row] = 0;
        }
        rows->identity[row] = identity;
        rows->count++;
        view->row_of[identity] = (uint32_t)row + 1;
    }
    if (side == 1 || !rows->seen[side][row])
        rows->node[side][row] = node;
    rows->seen[side][row] = 1;
    return add_all(rows->figures[side] + row * width, values, width) ? MR_OK : MR_OVERFLOW;
}

/* A side's node by its id; NONE when no node has it. */
static uint32_t node_index(const struct side *side, int64_t id)
{
    size_t count = side->node_count;
    /* mprof db numbers the nodes 1 .. n: most ids are their place + 1. */
    if (count && id >= side->id[0] && (uint64_t)id - (uint64_t)side->id[0] < count &&
        side->id[id - side->id[0]] == id)
        return (uint32_t)(id - side->id[0]);
    size_t low = 0, high = count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (side->id[middle] < id)
            low = middle + 1;
        else
            high = middle;
    }
    return low < count && side->id[low] == id ? (uint32_t)low : NONE;
}

static void free_paths(struct paths *paths)
{
    free(paths->node);
    free(paths->values);
    free(paths->counted);
    free(paths->at);
    free(paths->file);
    free(paths->line);
}

static int read_paths(sqlite3 *db, unsigned width, const struct pr_measures *measures, struct paths *paths)
{
    struct pr_row *rows;
    size_t count;
    int status = pr_read(db, measures, &rows, &count);
    if (status == MR_OK && count) {
        paths->capacity = count;
        if (!resize(&paths->node, count, sizeof(int64_t)) || !resize(&paths->values, count, width * sizeof(int64_t)) ||
            !resize(&paths->counted, count, 1) || !resize(&paths->at, count, sizeof(uint32_t)) ||
            !resize(&paths->file, count, sizeof(uint32_t)) || !resize(&paths->line, count, sizeof(int64_t)))
            status = MR_NO_MEMORY;
    }
    size_t next_suppressed = 0;
    for (size_t path = 0; status == MR_OK && path < count; path++) {
        paths->node[path] = rows[path].node;
        paths->at[path] = NONE;
        int64_t *figures = paths->values + path * width;
        status = pr_figures(measures, &rows[path], path, &next_suppressed, figures);
        bool counted = false;
        for (unsigned m = 0; m < width; m++)
            counted |= figures[m] != 0;
        paths->counted[path] = counted;
        paths->count++;
    }
    free(rows);
    return status;
}

/* A side's function ids, ascending, and a table of their places by id
 * where the ids are not too far apart (as the profiles number them: 1 ..
 * n), else a binary search a node. */
struct functions {
    const int64_t *ids;
    size_t count;
    uint32_t *place; /* by id - ids[0]; NONE: no function's */
    size_t span;
};

static uint32_t place_of(const struct functions *functions, int64_t id)
{
    if (functions->place) {
        uint64_t at = (uint64_t)id - (uint64_t)functions->ids[0];
        return id >= functions->ids[0] && at < functions->span ? functions->place[at] : NONE;
    }
    size_t low = 0, high = functions->count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (functions->ids[middle] < id)
            low = middle + 1;
        else
            high = middle;
    }
    return low < functions->count && functions->ids[low] == id ? (uint32_t)low : NONE;
}

static int place_functions(struct functions *functions)
{
    size_t count = functions->count;
    if (!count || (uint64_t)functions->ids[count - 1] - (uint64_t)functions->ids[0] >= 4 * (uint64_t)count + 4096)
        return MR_OK;
    functions->span = (size_t)((uint64_t)functions->ids[count - 1] - (uint64_t)functions->ids[0]) + 1;
    functions->place = malloc(functions->span * sizeof(uint32_t));
    if (!functions->place)
        return MR_NO_MEMORY;
    for (size_t at = 0; at < functions->span; at++)
        functions->place[at] = NONE;
    for (size_t n = 0; n < count; n++) {
        if (n && functions->ids[n] <= functions->ids[n - 1])
            return MR_CORRUPT;
        functions->place[(uint64_t)functions->ids[n] - (uint64_t)functions->ids[0]] = (uint32_t)n;
    }
    return MR_OK;
}

/* Reads a side's nodes (ids, parent ids, and their functions as places in
 * function_ids), and the file name and line of each counted path's node,
 * whose ids come in the same ascending order. */
static int read_nodes(struct dw_compare *compare, sqlite3 *db, struct side *side, const struct functions *functions,
                      struct paths *paths, int64_t **parent_ids, uint32_t **places)
{
    sqlite3_stmt *statement;
    if (sqlite3_prepare_v2(db, "SELECT id, parent_id, function_id, file, line FROM path_nodes ORDER BY id", -1,
                           &statement, NULL) != SQLITE_OK)
        return MR_DATABASE;
    size_t capacity = 0, path = 0;
    int status = MR_OK, step = SQLITE_DONE;
    while (status == MR_OK && (step = sqlite3_step(statement)) == SQLITE_ROW) {
        size_t node = side->node_count;
        if (node == capacity) {
            capacity = doubled(capacity);
            if (node >= LIMIT || !resize(&side->id, capacity, sizeof(int64_t)) ||
                !resize(&side->function, capacity, sizeof(int64_t)) ||
                !resize(parent_ids, capacity, sizeof(int64_t)) || !resize(places, capacity, sizeof(uint32_t))) {
                status = MR_NO_MEMORY;
                break;
            }
        }
        int64_t id = sqlite3_column_int64(statement, 0);
        if (id == DW_NO_NODE || (node && id <= side->id[node - 1])) {
            status = MR_CORRUPT;
            break;
        }
        side->id[node] = id;
        (*parent_ids)[node] = sqlite3_column_type(statement, 1) == SQLITE_NULL ? DW_NO_NODE
                                                                              : sqlite3_column_int64(statement, 1);
        int64_t function = sqlite3_column_int64(statement, 2);
        side->function[node] = function;
        uint32_t place = place_of(functions, function);
        if (place == NONE) {
            status = MR_CORRUPT; /* a function the profile does not have */
            break;
        }
        (*places)[node] = place;
        side->node_count++;
        while (path < paths->count && (paths->node[path] == DW_NO_NODE || paths->node[path] < id))
            path++; /* no node has its id: it has no chain, found below if it counts */
        for (; path < paths->count && paths->node[path] == id; path++) {
            paths->at[path] = (uint32_t)node;
            if (!paths->counted[path])
                continue;
            const void *text = sqlite3_column_type(statement, 3) == SQLITE_BLOB ? sqlite3_column_blob(statement, 3)
                                                                                : sqlite3_column_text(statement, 3);
            size_t size = text ? (size_t)sqlite3_column_bytes(statement, 3) : 0;
            status = file_of(compare, text ? text : "", size, &paths->file[path]);
            paths->line[path] = sqlite3_column_int64(statement, 4);
            if (status != MR_OK)
                break;
        }
    }
    if (status == MR_OK && step != SQLITE_DONE)
        status = MR_DATABASE;
    sqlite3_finalize(statement);
    return status;
}

/* Where the walk down a side's tree is: a node of each depth, outermost
 * first, as the Python reference's stack holds them. */
struct walk {
    size_t depth, capacity;
    uint32_t *node;
    uint32_t *next;      /* its next child to walk, a place in the children */
    uint8_t *outermost;  /* the outermost node of its key on the way down */
    uint64_t *below;     /* the first counted path below it (itself too), by place; paths->count: none */
    int64_t *entry;      /* the running sums as it was entered, width a node */
};

static int deeper(struct walk *walk, unsigned width)
{
    size_t capacity = doubled(walk->capacity);
    if (!resize(&walk->node, capacity, sizeof(uint32_t)) || !resize(&walk->next, capacity, sizeof(uint32_t)) ||
        !resize(&walk->outermost, capacity, 1) || !resize(&walk->below, capacity, sizeof(uint64_t)) ||
        !resize(&walk->entry, capacity, width * sizeof(int64_t)))
        return MR_NO_MEMORY;
    walk->capacity = capacity;
    return MR_OK;
}

/* Each key's figures with its callees': the sums of the counted paths it
 * is on, each path once however often the key recurs on it, and where the
 * walk first met it: its first path and its outermost place on it. */
struct cumulative {
    int64_t *sums;       /* width a key */
    uint32_t *on_chain;  /* how often the key is on the way down to the node walked */
    uint64_t *first;     /* the first path; paths->count: none */
    uint32_t *first_depth;
};

/* Numbers the chains of a side's nodes (chains[node]), given in an order
 * that has each node's parent before it.  Looking a chain up in the index
 * of chains, which outgrows the caches, waits on memory twice (the slot,
 * then the chain it holds): the hashes need no lookup, so the slots and
 * chains of nodes further on are fetched ahead. */
enum { SLOT_AHEAD = 16, CHAIN_AHEAD = 8 };

static int number_chains(struct dw_compare *compare, const struct side *side, const uint32_t *keys,
                         const uint32_t *order, size_t count, uint32_t *chains)
{
    uint64_t *hashes = malloc((side->node_count + 1) * sizeof(uint64_t));
    if (!hashes)
        return MR_NO_MEMORY;
    for (size_t n = 0; n < count; n++) {
        uint32_t node = order[n], parent = side->parent[node];
        hashes[node] = chain_hash(parent == NONE ? EMPTY_CHAIN_HASH : hashes[parent], keys[node]);
    }
    int status = MR_OK;
    for (size_t n = 0; status == MR_OK && n < count; n++) {
        const struct entry_index *index = &compare->chains;
        if (n + SLOT_AHEAD < count)
            __builtin_prefetch(&index->slots[(uint32_t)hashes[order[n + SLOT_AHEAD]] & index->mask]);
        if (n + CHAIN_AHEAD < count) {
            uint32_t entry = index->slots[(uint32_t)hashes[order[n + CHAIN_AHEAD]] & index->mask].entry;
            if (entry)
                __builtin_prefetch(&compare->chain[entry - 1]);
        }
        uint32_t node = order[n], parent = side->parent[node];
        status = chain_of(compare, parent == NONE ? 0 : chains[parent], keys[node], hashes[node], &chains[node]);
    }
    free(hashes);
    return status;
}

/* The walk down one side's tree, in the Python reference's order: outermost
 * nodes, then each node's children, in the order of their ids; twice, first
 * to number each node's chain (chains[node]) in that order, then to sum
 * each key's paths, as the difference of the running sums of the paths
 * met at the entry and at the exit of each outermost node of the key. */
static int walk_down(struct dw_compare *compare, const struct side *side, const uint32_t *keys,
                     const uint32_t *path_of, const struct paths *paths, uint32_t *chains,
                     struct cumulative *cumulative)
{
    unsigned width = compare->width;
    size_t count = side->node_count;
    /* Children in the order of their ids, laid end to end by parent; the
     * outermost nodes last. */
    uint32_t *start = calloc(count + 2, sizeof(uint32_t));
    uint32_t *children = malloc((count + 1) * sizeof(uint32_t));
    int64_t *running = calloc(width + 1, sizeof(int64_t));
    struct walk walk = {0};
    int status = start && children && running ? MR_OK : MR_NO_MEMORY;
    for (size_t node = 0; status == MR_OK && node < count; node++) {
        uint32_t parent = side->parent[node];
        if (parent != MISSING)
            start[(parent == NONE ? count : parent) + 1]++;
    }
    for (size_t node = 0; status == MR_OK && node <= count; node++)
        start[node + 1] += start[node];
    for (size_t node = 0; status == MR_OK && node < count; node++) {
        uint32_t parent = side->parent[node];
        if (parent != MISSING)
            children[start[parent == NONE ? count : parent]++] = (uint32_t)node;
    }
    /* Each list's start had moved to its end: back to its start. */
    for (size_t node = count + 1; status == MR_OK && node > 0; node--)
        start[node] = start[node - 1];
    if (status == MR_OK)
        start[0] = 0;
    /* The nodes in the order of the walk below, parents before children,
     * and their chains. */
    uint32_t *order = malloc((count + 1) * sizeof(uint32_t));
    size_t reached = 0;
    if (!order && status == MR_OK)
        status = MR_NO_MEMORY;
    uint32_t root_next = status == MR_OK ? start[count] : 0;
    while (status == MR_OK) {
        uint32_t node;
        if (walk.depth == 0) {
            if (root_next == start[count + 1])
                break;
            node = children[root_next++];
        } else if (walk.next[walk.depth - 1] < start[walk.node[walk.depth - 1] + 1]) {
            node = children[walk.next[walk.depth - 1]++];
        } else {
            walk.depth--;
            continue;
        }
        if (walk.depth == walk.capacity && (status = deeper(&walk, width)) != MR_OK)
            break;
        walk.node[walk.depth] = node;
        walk.next[walk.depth++] = start[node];
        order[reached++] = node;
    }
    if (status == MR_OK)
        status = number_chains(compare, side, keys, order, reached, chains);
    free(order);
    uint64_t never = paths->count;
    root_next = status == MR_OK ? start[count] : 0;
    while (status == MR_OK) {
        uint32_t node;
        if (walk.depth == 0) {
            if (root_next == start[count + 1])
                break;
            node = children[root_next++];
        } else {
            size_t top = walk.depth - 1;
            if (walk.next[top] < start[walk.node[top] + 1]) {
                node = children[walk.next[top]++];
            } else {
                /* Leaving the node: its key's figures, if it is the
                 * outermost of its key, are what its subtree added. */
                uint32_t key = keys[walk.node[top]];
                cumulative->on_chain[key]--;
                uint64_t below = walk.below[top];
                if (walk.outermost[top] && below < never) {
                    int64_t *change = walk.entry + top * width;
                    for (unsigned f = 0; f < width; f++) {
                        if (__builtin_sub_overflow(running[f], change[f], &change[f]))
                            status = MR_OVERFLOW;
                    }
                    if (!add_all(cumulative->sums + (size_t)key * width, change, width))
                        status = MR_OVERFLOW;
                    if (below < cumulative->first[key] ||
                        (below == cumulative->first[key] && top < cumulative->first_depth[key])) {
                        cumulative->first[key] = below;
                        cumulative->first_depth[key] = (uint32_t)top;
                    }
                }
                if (top && below < walk.below[top - 1])
                    walk.below[top - 1] = below;
                walk.depth--;
                continue;
            }
        }
        if (walk.depth == walk.capacity && (status = deeper(&walk, width)) != MR_OK)
            break;
        size_t depth = walk.depth++;
        uint32_t key = keys[node];
        walk.node[depth] = node;
        walk.next[depth] = start[node];
        walk.outermost[depth] = cumulative->on_chain[key]++ == 0;
        memcpy(walk.entry + depth * width, running, width * sizeof(int64_t));
        walk.below[depth] = never;
        uint32_t path = path_of[node];
        if (path != NONE) {
            walk.below[depth] = path;
            if (!add_all(running, paths->values + (size_t)path * width, width))
                status = MR_OVERFLOW;
        }
    }
    free(walk.node);
    free(walk.next);
    free(walk.outermost);
    free(walk.below);
    free(walk.entry);
    free(start);
    free(children);
    free(running);
    return status;
}

struct first_met {
    uint64_t path;
    uint32_t depth;
    uint32_t key;
};

static int by_first_met(const void *a, const void *b)
{
    const struct first_met *x = a, *y = b;
    if (x->path != y->path)
        return x->path < y->path ? -1 : 1;
    return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* The cumulative rows, in the order the walk first met their keys. */
static int add_cumulative(struct dw_compare *compare, unsigned side, const struct cumulative *cumulative,
                          uint64_t never)
{
    size_t count = 0;
    struct first_met *met = malloc((compare->key_count + 1) * sizeof *met);
    if (!met)
        return MR_NO_MEMORY;
    for (uint32_t key = 0; key < compare->key_count; key++) {
        if (cumulative->first[key] < never)
            met[count++] = (struct first_met){cumulative->first[key], cumulative->first_depth[key], key};
    }
    qsort(met, count, sizeof *met, by_first_met);
    int status = MR_OK;
    for (size_t n = 0; status == MR_OK && n < count; n++)
        status = add_row(compare, &compare->views[DW_CUMULATIVE], met[n].key, side, DW_NO_NODE,
                         cumulative->sums + (size_t)met[n].key * compare->width);
    free(met);
    return status;
}

static int add_side(struct dw_compare *compare, unsigned side_number, sqlite3 *db, const int64_t *function_ids,
                    const uint32_t *function_keys, size_t function_count, const struct pr_measures *measures)
{
    unsigned width = compare->width;
    struct side *side = &compare->sides[side_number];
    struct paths paths = {0};
    int64_t *parent_ids = NULL;
    uint32_t *keys = NULL, *path_of = NULL, *chains = NULL;
    struct cumulative cumulative = {0};
    struct functions functions = {function_ids, function_count, NULL, 0};
    int status = function_count >= LIMIT ? MR_NO_MEMORY : place_functions(&functions);
    if (status == MR_OK)
        status = read_paths(db, width, measures, &paths);
    if (status == MR_OK)
        status = read_nodes(compare, db, side, &functions, &paths, &parent_ids, &keys);
    size_t count = side->node_count;
    if (status == MR_OK) {
        side->parent = malloc((count + 1) * sizeof(uint32_t));
        path_of = malloc((count + 1) * sizeof(uint32_t));
        chains = malloc((count + 1) * sizeof(uint32_t));
        cumulative.sums = calloc((size_t)compare->key_count * width + 1, sizeof(int64_t));
        cumulative.on_chain = calloc(compare->key_count + 1, sizeof(uint32_t));
        cumulative.first = malloc((compare->key_count + 1) * sizeof(uint64_t));
        cumulative.first_depth = calloc(compare->key_count + 1, sizeof(uint32_t));
        if (!side->parent || !path_of || !chains || !cumulative.sums || !cumulative.on_chain || !cumulative.first ||
            !cumulative.first_depth)
            status = MR_NO_MEMORY;
    }
    for (size_t node = 0; status == MR_OK && node < count; node++) {
        uint32_t key = function_keys[keys[node]];
        if (key == 0 || key >= compare->key_count)
            status = MR_CORRUPT;
        keys[node] = key;
        side->parent[node] = parent_ids[node] == DW_NO_NODE ? NONE : node_index(side, parent_ids[node]);
        if (side->parent[node] == NONE && parent_ids[node] != DW_NO_NODE)
            side->parent[node] = MISSING;
        path_of[node] = NONE;
        chains[node] = NONE;
    }
    for (uint32_t key = 0; status == MR_OK && key < compare->key_count; key++)
        cumulative.first[key] = paths.count;
    /* A node's own figures are those of its last counted path, as the
     * reference's dict of paths by node keeps them. */
    for (size_t path = 0; status == MR_OK && path < paths.count; path++) {
        if (paths.counted[path] && paths.at[path] != NONE)
            path_of[paths.at[path]] = (uint32_t)path;
    }
    if (status == MR_OK)
        status = walk_down(compare, side, keys, path_of, &paths, chains, &cumulative);
    /* The paths of no caller: the empty chain's key, 0, met at its first path's place. */
    for (size_t path = 0; status == MR_OK && path < paths.count; path++) {
        if (!paths.counted[path] || paths.node[path] != DW_NO_NODE)
            continue;
        if (paths.count && cumulative.first[0] == paths.count)
            cumulative.first[0] = path;
        if (!add_all(cumulative.sums, paths.values + path * width, width))
            status = MR_OVERFLOW;
    }
    if (status == MR_OK)
        status = add_cumulative(compare, side_number, &cumulative, paths.count);
    int64_t *totals = compare->totals[side_number];
    for (size_t path = 0; status == MR_OK && path < paths.count; path++) {
        if (!paths.counted[path])
            continue;
        const int64_t *values = paths.values + path * width;
        if (!add_all(totals, values, width)) {
            status = MR_OVERFLOW;
            break;
        }
        uint32_t chain = 0, key = 0, site;
        if (paths.node[path] != DW_NO_NODE) {
            uint32_t node = paths.at[path];
            if (node == NONE || chains[node] == NONE) {
                status = MR_CORRUPT; /* no node has its id, or no walk from the outermost reaches it */
                break;
            }
            chain = chains[node];
            key = keys[node];
            status = site_of(compare, key, paths.file[path], paths.line[path], &site);
        } else {
            status = site_of(compare, 0, NONE, 0, &site);
        }
        int64_t node = paths.node[path];
        if (status == MR_OK)
            status = add_row(compare, &compare->views[DW_PATHS], chain, side_number, node, values);
        if (status == MR_OK)
            status = add_row(compare, &compare->views[DW_FUNCTIONS], key, side_number, node, values);
        if (status == MR_OK)
            status = add_row(compare, &compare->views[DW_SITES], site, side_number, node, values);
    }
    free_paths(&paths);
    free(functions.place);
    free(parent_ids);
    free(keys);
    free(path_of);
    free(chains);
    free(cumulative.sums);
    free(cumulative.on_chain);
    free(cumulative.first);
    free(cumulative.first_depth);
    return status;
}

int dw_add(struct dw_compare *compare, unsigned side, const void *database, size_t database_size,
           const int64_t *function_ids, const uint32_t *function_keys, size_t function_count,
           const int64_t *coefficients, const uint8_t *gates, const int64_t *suppressed, size_t suppressed_count,
           const int64_t *values, size_t value_count, char *error, size_t error_size)
{
    if (side > 1 || compare->sides[side].id || (!values && (!coefficients || !gates)))
        return MR_CORRUPT;
    sqlite3 *db;
    int status = pr_open(database, database_size, &db, error, error_size);
    if (status != MR_OK)
        return status;
    struct pr_measures measures = {compare->width, coefficients, gates, suppressed, suppressed_count, values,
                                   value_count};
    status = add_side(compare, side, db, function_ids, function_keys, function_count, &measures);
    if (status == MR_DATABASE)
        snprintf(error, error_size, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
    return status;
}

const int64_t *dw_totals(const struct dw_compare *compare, unsigned side)
{
    return compare->totals[side & 1];
}

void dw_view(const struct dw_compare *compare, unsigned kind, struct dw_view *out)
{
    *out = compare->views[kind % DW_KINDS].rows;
}

struct change {
    uint64_t size;
    uint32_t row;
};

static int by_change(const void *a, const void *b)
{
    const struct change *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

size_t dw_changed(const struct dw_compare *compare, unsigned kind, unsigned index, uint32_t *rows, uint64_t *sizes)
{
    const struct dw_view *view = &compare->views[kind % DW_KINDS].rows;
    unsigned width = compare->width;
    struct change *changes = malloc((view->count + 1) * sizeof *changes);
    if (!changes)
        return SIZE_MAX;
    size_t count = 0;
    for (size_t row = 0; row < view->count; row++) {
        const int64_t *base = view->figures[0] + row * width, *new = view->figures[1] + row * width;
        if (memcmp(base, new, width * sizeof(int64_t)) == 0)
            continue;
        /* The size of the change, exact: it may not fit in an int64_t. */
        uint64_t size = new[index] >= base[index] ? (uint64_t)new[index] - (uint64_t)base[index]
                                                  : (uint64_t)base[index] - (uint64_t)new[index];
        changes[count++] = (struct change){size, (uint32_t)row};
    }
    qsort(changes, count, sizeof *changes, by_change);
    for (size_t n = 0; n < count; n++) {
        rows[n] = changes[n].row;
        sizes[n] = changes[n].size;
    }
    free(changes);
    return count;
}

int dw_chains(const struct dw_compare *compare, unsigned side, const int64_t *nodes, size_t count, uint64_t *ends,
              int64_t *functions)
{
    const struct side *tree = &compare->sides[side & 1];
    uint64_t end = 0;
    for (size_t n = 0; n < count; n++) {
        uint64_t depth = 0;
        if (node_index(tree, nodes[n]) == NONE)
            return MR_CORRUPT;
        for (uint32_t node = node_index(tree, nodes[n]); node != NONE; node = tree->parent[node]) {
            if (node == MISSING || depth > tree->node_count)
                return MR_CORRUPT;
            depth++;
        }
        if (functions) {
            /* Written innermost last: from the end of the path's place up. */
            uint64_t at = end + depth;
            for (uint32_t node = node_index(tree, nodes[n]); node != NONE; node = tree->parent[node])
                functions[--at] = tree->function[node];
        }
        end += depth;
        ends[n] = end;
    }
    return MR_OK;
}

int dw_flame_make(const struct dw_compare *compare, unsigned index, struct dw_flame **out)
{
    const struct dw_view *view = &compare->views[DW_PATHS].rows;
    unsigned width = compare->width;
    size_t capacity = compare->chain_count + 2;
    struct dw_flame *flame = calloc(1, sizeof *flame);
    uint32_t *node_of = malloc(capacity * sizeof(uint32_t)); /* each chain's node; NONE: none yet */
    uint32_t *last_child = malloc(capacity * sizeof(uint32_t));
    uint32_t *up = malloc(capacity * sizeof(uint32_t)); /* a row's chains, innermost first */
    int status = MR_NO_MEMORY;
    if (!flame || !node_of || !last_child || !up || !(flame->chain = malloc(capacity * sizeof(uint32_t))) ||
        !(flame->row = malloc(capacity * sizeof(uint32_t))) || !(flame->depth = malloc(capacity * sizeof(uint32_t))) ||
        !(flame->sums = calloc(capacity * 3, sizeof(int64_t))) ||
        !(flame->first_child = malloc(capacity * sizeof(uint32_t))) ||
        !(flame->next_sibling = malloc(capacity * sizeof(uint32_t))))
        goto done;
    status = MR_OK;
    for (size_t chain = 0; chain < compare->chain_count; chain++)
        node_of[chain] = NONE;
    /* Node 0, the root; the row of no chain gets a node of its own. */
    flame->chain[0] = 0;
    flame->row[0] = NONE;
    flame->depth[0] = 0;
    flame->first_child[0] = flame->next_sibling[0] = last_child[0] = NONE;
    flame->count = 1;
    for (size_t row = 0; status == MR_OK && row < view->count; row++) {
        int64_t base = view->figures[0][row * width + index], new = view->figures[1][row * width + index];
        if (!base && !new)
            continue;
        int64_t sums[3] = {base, new, base > new ? base : new};
        size_t depth = 0;
        uint32_t chain = view->identity[row];
        if (chain == 0) {
            up[depth++] = NONE; /* the row of no chain */
        } else {
            for (; chain != 0; chain = compare->chain[chain].parent)
                up[depth++] = chain;
        }
        /* The root takes each row's figures, as a frame does. */
        for (int s = 0; s < 3; s++)
            if (!add_checked(&flame->sums[s], sums[s]))
                status = MR_OVERFLOW;
        uint32_t parent = 0;
        for (size_t place = 0; place < depth; place++) {
            uint32_t at = up[depth - 1 - place];
            uint32_t node = at == NONE ? NONE : node_of[at];
            if (node == NONE) {
                node = (uint32_t)flame->count++;
                if (at != NONE)
                    node_of[at] = node;
                flame->chain[node] = at == NONE ? 0 : at;
                flame->row[node] = (uint32_t)row;
                flame->depth[node] = (uint32_t)place;
                flame->first_child[node] = flame->next_sibling[node] = last_child[node] = NONE;
                if (last_child[parent] == NONE)
                    flame->first_child[parent] = node;
                else
                    flame->next_sibling[last_child[parent]] = node;
                last_child[parent] = node;
            }
            for (int s = 0; s < 3; s++)
                if (!add_checked(&flame->sums[(size_t)node * 3 + s], sums[s]))
                    status = MR_OVERFLOW;
            parent = node;
        }
    }
done:
    free(node_of);
    free(last_child);
    free(up);
    if (status != MR_OK) {
        dw_flame_free(flame);
        flame = NULL;
    }
    *out = flame;
    return status;
}

void dw_flame_free(struct dw_flame *flame)
{
    if (!flame)
        return;
    free(flame->chain);
    free(flame->row);
    free(flame->depth);
    free(flame->sums);
    free(flame->first_child);
    free(flame->next_sibling);
    free(flame);
}
