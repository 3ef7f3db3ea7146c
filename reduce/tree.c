/* The call paths of all the data files, symbolized: a tree of frames, each
 * node a function called from its parent node's frame at one file and
 * line, with frames above main dropped (start-up code) and inlined
 * functions as frames of their own.  Each path keeps its figures, exact
 * from the program's entry down. */
#include "reduce.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "index.h"

/* No node: the parent of an outermost frame, the end of the empty path. */
#define NONE (-1)

struct tree_node {
    int64_t parent;
    struct mr_frame frame;
};

struct mr_tree {
    struct tree_node *nodes; /* parents first */
    size_t node_count, node_capacity;
    struct entry_index node_index;
    int64_t *path_end; /* by the node a path ends at, or NONE */
    uint64_t *path_figures;
    size_t path_count, path_capacity;
    uint32_t *path_of; /* by node: the number + 1 of the path ending there, 0 for none */
    size_t path_of_capacity;
    size_t empty_path; /* the number + 1 of the path with no frames, 0 for none */
};

struct mr_tree *mr_tree_new(void)
{
    struct mr_tree *tree = calloc(1, sizeof *tree);
    if (!tree)
        return NULL;
    if (!entry_index_init(&tree->node_index)) {
        mr_tree_free(tree);
        return NULL;
    }
    return tree;
}

void mr_tree_free(struct mr_tree *tree)
{
    if (!tree)
        return;
    free(tree->nodes);
    entry_index_free(&tree->node_index);
    free(tree->path_end);
    free(tree->path_figures);
    free(tree->path_of);
    free(tree);
}

static uint64_t node_hash(int64_t parent, const struct mr_frame *frame)
{
    uint64_t hash = mix((uint64_t)parent ^ (uint64_t)frame->function << 40);
    hash = mix(hash ^ ((uint64_t)frame->file << 32 | frame->line));
    return hash ^ frame->inlined;
}

static bool same_node(const struct tree_node *node, int64_t parent, const struct mr_frame *frame)
{
    return node->parent == parent && node->frame.function == frame->function && node->frame.file == frame->file &&
           node->frame.line == frame->line && node->frame.inlined == frame->inlined;
}

/* The node of frame called from parent, made when new; NONE when memory ran out. */
static int64_t node_of(struct mr_tree *tree, int64_t parent, const struct mr_frame *frame)
{
    uint64_t hash = node_hash(parent, frame);
    size_t slot;
    bool found;
    ENTRY_INDEX_FIND(&tree->node_index, hash, node, same_node(&tree->nodes[node], parent, frame), slot, found);
    if (found)
        return (int64_t)ENTRY_INDEX_AT(&tree->node_index, slot);
    if (!grow((void **)&tree->nodes, &tree->node_capacity, tree->node_count, sizeof *tree->nodes))
        return NONE;
    size_t made = tree->node_count++;
    tree->nodes[made] = (struct tree_node){parent, *frame};
    if (!entry_index_add(&tree->node_index, slot, hash, made))
        return NONE;
    return (int64_t)made;
}

static int add_path(struct mr_tree *tree, int64_t end, const uint64_t *figures)
{
    if (end != NONE && (size_t)end >= tree->path_of_capacity) {
        size_t capacity = tree->node_capacity;
        uint32_t *bigger = realloc(tree->path_of, capacity * sizeof *bigger);
        if (!bigger)
            return MR_NO_MEMORY;
        memset(bigger + tree->path_of_capacity, 0, (capacity - tree->path_of_capacity) * sizeof *bigger);
        tree->path_of = bigger;
        tree->path_of_capacity = capacity;
    }
    size_t *number = end != NONE ? NULL : &tree->empty_path;
    size_t path = end != NONE ? tree->path_of[end] : *number;
    if (!path) {
        path = tree->path_count;
        if (path >= UINT32_MAX)
            return MR_NO_MEMORY;
        if (!grow((void **)&tree->path_end, &tree->path_capacity, path, sizeof *tree->path_end))
            return MR_NO_MEMORY;
        uint64_t *bigger = realloc(tree->path_figures, tree->path_capacity * MR_FIGURES * sizeof *bigger);
        if (!bigger)
            return MR_NO_MEMORY;
        tree->path_figures = bigger;
        tree->path_end[path] = end;
        memset(tree->path_figures + path * MR_FIGURES, 0, MR_FIGURES * sizeof *bigger);
        tree->path_count++;
        if (end != NONE)
            tree->path_of[end] = (uint32_t)(path + 1);
        else
            *number = path + 1;
    } else {
        path--;
    }
    /* Each file's figures add up within 64 bits; several files' may not. */
    for (unsigned f = 0; f < MR_FIGURES; f++)
        if (__builtin_add_overflow(tree->path_figures[path * MR_FIGURES + f], figures[f],
                                   &tree->path_figures[path * MR_FIGURES + f]))
            return MR_OVERFLOW;
    return MR_OK;
}

/* The nodes that call main, directly or not: start-up code, whose frames
 * no path keeps. */
static void mark_start_up(const struct mr_calls *calls, const uint8_t *from_main, uint8_t *start_up)
{
    for (size_t n = 0; n < calls->node_count; n++) {
        if (!from_main[calls->address[n]])
            continue;
        for (int64_t up = calls->parent[n]; up >= 0 && !start_up[up]; up = calls->parent[up])
            start_up[up] = 1;
    }
}

int mr_tree_add(struct mr_tree *tree, const struct mr_calls *calls, const uint32_t *first,
                const struct mr_frame *frames, const uint8_t *from_main, size_t function_count, uint32_t *taken,
                size_t *taken_count)
{
    size_t count = calls->node_count ? calls->node_count : 1;
    uint8_t *start_up = calloc(count, 1);
    int64_t *ends = malloc(count * sizeof *ends); /* the frame node each file node ends at */
    uint8_t *seen = calloc(function_count ? function_count : 1, 1);
    int status = MR_NO_MEMORY;
    *taken_count = 0;
    if (!start_up || !ends || !seen)
        goto done;
    mark_start_up(calls, from_main, start_up);
    for (size_t n = 0; n < calls->node_count; n++) {
        ends[n] = NONE;
        if (start_up[n])
            continue;
        uint32_t address = calls->address[n];
        int64_t parent = from_main[address] || calls->parent[n] < 0 ? NONE : ends[calls->parent[n]];
        for (uint32_t f = first[address]; f < first[address + 1]; f++) {
            uint32_t function = frames[f].function;
            if (function >= function_count) {
                status = MR_CORRUPT;
                goto done;
            }
            if (!seen[function]) {
                seen[function] = 1;
                taken[(*taken_count)++] = f;
            }
            parent = node_of(tree, parent, &frames[f]);
            if (parent == NONE)
                goto done;
        }
        ends[n] = parent;
    }
    for (size_t p = 0; p < calls->path_count; p++) {
        int64_t node = calls->path_node[p];
        status = add_path(tree, node >= 0 ? ends[node] : NONE, calls->figures + p * MR_FIGURES);
        if (status != MR_OK)
            goto done;
    }
    status = MR_OK;
done:
    free(start_up);
    free(ends);
    free(seen);
    return status;
}

const uint64_t *mr_tree_path_figures(const struct mr_tree *tree, size_t path)
{
    return tree->path_figures + path * MR_FIGURES;
}

void mr_numbered_free(struct mr_numbered *numbered)
{
    if (!numbered)
        return;
    free(numbered->node_parent);
    free(numbered->node_frame);
    free(numbered->path_node);
    free(numbered->path_order);
    free(numbered->path_chain);
    free(numbered->chain_innermost);
    free(numbered->chain_groups);
    free(numbered->chain_outside);
    free(numbered);
}

static int by_number(const void *a, const void *b, void *numbers)
{
    const uint64_t *number = numbers;
    uint64_t x = number[*(const size_t *)a], y = number[*(const size_t *)b];
    return (x > y) - (x < y);
}

/* Each node's chain from its parent's, and which of them end the paths. */
struct chains {
    uint32_t *groups;
    int64_t *outside;
};

static uint64_t chain_hash(int64_t innermost, uint32_t groups, int64_t outside)
{
    return mix(mix((uint64_t)innermost ^ (uint64_t)groups << 40) ^ (uint64_t)outside);
}

static int number_chains(const struct mr_tree *tree, const struct chains *of_node, struct mr_numbered *numbered)
{
    size_t paths = tree->path_count ? tree->path_count : 1;
    numbered->path_chain = malloc(paths * sizeof *numbered->path_chain);
    numbered->chain_innermost = malloc(paths * sizeof *numbered->chain_innermost);
    numbered->chain_groups = malloc(paths * sizeof *numbered->chain_groups);
    numbered->chain_outside = malloc(paths * sizeof *numbered->chain_outside);
    struct entry_index index;
    if (!numbered->path_chain || !numbered->chain_innermost || !numbered->chain_groups || !numbered->chain_outside ||
        !entry_index_init(&index))
        return MR_NO_MEMORY;
    int status = MR_OK;
    for (size_t row = 0; row < numbered->path_count; row++) {
        int64_t end = tree->path_end[numbered->path_order[row]];
        int64_t innermost = end != NONE ? (int64_t)tree->nodes[end].frame.function : NONE;
        uint32_t groups = end != NONE ? of_node->groups[end] : 0;
        int64_t outside = end != NONE ? of_node->outside[end] : NONE;
        uint64_t hash = chain_hash(innermost, groups, outside);
        size_t slot;
        bool found;
        ENTRY_INDEX_FIND(&index, hash, chain,
                         numbered->chain_innermost[chain] == innermost && numbered->chain_groups[chain] == groups &&
                             numbered->chain_outside[chain] == outside,
                         slot, found);
        size_t chain = found ? ENTRY_INDEX_AT(&index, slot) : numbered->chain_count;
        if (!found) {
            numbered->chain_innermost[chain] = innermost;
            numbered->chain_groups[chain] = groups;
            numbered->chain_outside[chain] = outside;
            numbered->chain_count++;
            if (!entry_index_add(&index, slot, hash, chain)) {
                status = MR_NO_MEMORY;
                break;
            }
        }
        numbered->path_chain[row] = (uint32_t)chain;
    }
    entry_index_free(&index);
    return status;
}

int mr_tree_number(const struct mr_tree *tree, const uint32_t *groups, const uint8_t *outside,
                   size_t function_count, struct mr_numbered **out)
{
    *out = NULL;
    size_t nodes = tree->node_count ? tree->node_count : 1, paths = tree->path_count ? tree->path_count : 1;
    struct mr_numbered *numbered = calloc(1, sizeof *numbered);
    uint64_t *number = calloc(nodes, sizeof *number); /* 0: on no path */
    struct chains of_node = {malloc(nodes * sizeof *of_node.groups), malloc(nodes * sizeof *of_node.outside)};
    uint64_t *end_number = malloc(paths * sizeof *end_number);
    int status = MR_NO_MEMORY;
    if (!numbered || !number || !of_node.groups || !of_node.outside || !end_number)
        goto done;
    numbered->tree = tree;
    for (size_t p = 0; p < tree->path_count; p++)
        for (int64_t step = tree->path_end[p]; step != NONE && !number[step]; step = tree->nodes[step].parent)
            number[step] = 1;
    numbered->node_parent = malloc(nodes * sizeof *numbered->node_parent);
    numbered->node_frame = malloc(nodes * sizeof *numbered->node_frame);
    if (!numbered->node_parent || !numbered->node_frame)
        goto done;
    for (size_t n = 0; n < tree->node_count; n++) {
        const struct tree_node *node = &tree->nodes[n];
        uint32_t function = node->frame.function;
        if (function >= function_count) {
            status = MR_CORRUPT;
            goto done;
        }
        /* A path's chain is its caller's extended by one frame. */
        of_node.groups[n] = groups[function] | (node->parent != NONE ? of_node.groups[node->parent] : 0);
        of_node.outside[n] = outside[function] ? (int64_t)function
                                               : node->parent != NONE ? of_node.outside[node->parent] : NONE;
        if (!number[n])
            continue;
        size_t row = numbered->node_count++;
        number[n] = row + 1;
        numbered->node_parent[row] = node->parent != NONE ? number[node->parent] : 0;
        numbered->node_frame[row] = node->frame;
    }
    numbered->path_node = malloc(paths * sizeof *numbered->path_node);
    numbered->path_order = malloc(paths * sizeof *numbered->path_order);
    if (!numbered->path_node || !numbered->path_order)
        goto done;
    for (size_t p = 0; p < tree->path_count; p++) {
        end_number[p] = tree->path_end[p] != NONE ? number[tree->path_end[p]] : 0;
        numbered->path_order[p] = p;
    }
    qsort_r(numbered->path_order, tree->path_count, sizeof *numbered->path_order, by_number, end_number);
    for (size_t row = 0; row < tree->path_count; row++)
        numbered->path_node[row] = end_number[numbered->path_order[row]];
    numbered->path_count = tree->path_count;
    status = number_chains(tree, &of_node, numbered);
done:
    free(number);
    free(of_node.groups);
    free(of_node.outside);
    free(end_number);
    if (status != MR_OK)
        mr_numbered_free(numbered);
    else
        *out = numbered;
    return status;
}
