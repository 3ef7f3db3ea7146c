/* What one file's call path tree adds up to: the direct allocation sites
 * (the paths' innermost addresses), the paper's partial chains of the leak
 * table (paths grouped by their innermost leak-depth addresses) and the
 * caller/callee pairs of the call graph (each pair once per occurrence in
 * a path), all exact sums of the paths' figures.  No sum can overflow:
 * the decoder refused a file whose columns add up past 64 bits. */
#include "reduce.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

#define LEAK_FIGURES MR_LEAK_FIGURES

void mr_totals_free(struct mr_totals *totals)
{
    if (!totals)
        return;
    free(totals->site_address);
    free(totals->site_figures);
    free(totals->leak_node);
    free(totals->leak_chain);
    free(totals->leak_chain_end);
    free(totals->leak_figures);
    free(totals->pair_caller);
    free(totals->pair_callee);
    free(totals->pair_figures);
    free(totals);
}

static void add_figures(uint64_t *into, const uint64_t *from, unsigned count)
{
    for (unsigned f = 0; f < count; f++)
        into[f] += from[f];
}

static uint64_t chain_hash(const struct mr_calls *calls, int64_t node, unsigned depth)
{
    uint64_t hash = 0x9e3779b97f4a7c15ULL;
    for (unsigned step = 0; step < depth && node >= 0; step++, node = calls->parent[node])
        hash = mix(hash ^ calls->address[node]);
    return hash;
}

/* Two paths have one chain when their innermost depth addresses agree. */
static bool same_chain(const struct mr_calls *calls, int64_t a, int64_t b, unsigned depth)
{
    for (unsigned step = 0; step < depth; step++) {
        if (a < 0 || b < 0)
            return a < 0 && b < 0;
        if (calls->address[a] != calls->address[b])
            return false;
        a = calls->parent[a];
        b = calls->parent[b];
    }
    return true;
}

/* Sites by address, in the order of the paths that first name them. */
static int add_sites(const struct mr_calls *calls, struct mr_totals *totals)
{
    struct entry_index index;
    if (!entry_index_init(&index))
        return MR_NO_MEMORY;
    for (size_t p = 0; p < calls->path_count; p++) {
        int64_t node = calls->path_node[p];
        if (node < 0)
            continue;
        uint32_t address = calls->address[node];
        uint64_t hash = mix(address);
        size_t slot;
        bool found;
        ENTRY_INDEX_FIND(&index, hash, site, totals->site_address[site] == address, slot, found);
        size_t site = found ? ENTRY_INDEX_AT(&index, slot) : totals->site_count;
        if (!found) {
            totals->site_address[site] = address;
            totals->site_count++;
            if (!entry_index_add(&index, slot, hash, site)) {
                entry_index_free(&index);
                return MR_NO_MEMORY;
            }
        }
        add_figures(totals->site_figures + site * MR_FIGURES, calls->figures + p * MR_FIGURES, MR_FIGURES);
    }
    entry_index_free(&index);
    return MR_OK;
}

static int add_leaks(const struct mr_calls *calls, unsigned depth, struct mr_totals *totals)
{
    struct entry_index index;
    if (!entry_index_init(&index))
        return MR_NO_MEMORY;
    for (size_t p = 0; p < calls->path_count; p++) {
        int64_t node = calls->path_node[p];
        uint64_t hash = chain_hash(calls, node, depth);
        size_t slot;
        bool found;
        ENTRY_INDEX_FIND(&index, hash, leak, same_chain(calls, totals->leak_node[leak], node, depth), slot, found);
        size_t leak = found ? ENTRY_INDEX_AT(&index, slot) : totals->leak_count;
        if (!found) {
            totals->leak_node[leak] = node;
            totals->leak_count++;
            if (!entry_index_add(&index, slot, hash, leak)) {
                entry_index_free(&index);
                return MR_NO_MEMORY;
            }
        }
        const uint64_t *from = calls->figures + p * MR_FIGURES;
        uint64_t *into = totals->leak_figures + leak * LEAK_FIGURES;
        into[0] += from[0];
        into[1] += from[1];
        for (unsigned c = 0; c < 4; c++) {
            into[2] += from[2 + c];
            into[3] += from[6 + c];
        }
        for (unsigned k = 0; k < MR_KIND_FIGURES; k++)
            into[4 + k] += from[MR_PATH_FIGURES + k];
    }
    entry_index_free(&index);
    return MR_OK;
}

/* Each node's allocations and bytes with all of its descendants', passed
 * up from the last node back (children come after their parents), and the
 * pair of each node and its parent. */
static int add_pairs(const struct mr_calls *calls, int call_graph, struct mr_totals *totals)
{
    size_t nodes = calls->node_count;
    uint64_t *below = calloc((nodes ? nodes : 1) * MR_BELOW, sizeof *below);
    struct entry_index index;
    if (!below || !entry_index_init(&index)) {
        free(below);
        return MR_NO_MEMORY;
    }
    for (size_t p = 0; p < calls->path_count; p++) {
        int64_t node = calls->path_node[p];
        if (node < 0)
            continue;
        const uint64_t *from = calls->figures + p * MR_FIGURES;
        uint64_t *into = below + (size_t)node * MR_BELOW;
        into[0] += from[0];
        add_figures(into + 1, from + 2, 4);
    }
    int status = MR_OK;
    for (size_t n = nodes; n-- > 0;) {
        int64_t parent = calls->parent[n];
        if (parent < 0)
            continue;
        add_figures(below + (size_t)parent * MR_BELOW, below + n * MR_BELOW, MR_BELOW);
        if (!call_graph)
            continue;
        uint32_t caller = calls->address[parent], callee = calls->address[n];
        uint64_t hash = mix((uint64_t)caller << 32 | callee);
        size_t slot;
        bool found;
        ENTRY_INDEX_FIND(&index, hash, pair,
                         totals->pair_caller[pair] == caller && totals->pair_callee[pair] == callee, slot, found);
        size_t pair = found ? ENTRY_INDEX_AT(&index, slot) : totals->pair_count;
        if (!found) {
            totals->pair_caller[pair] = caller;
            totals->pair_callee[pair] = callee;
            totals->pair_count++;
            if (!entry_index_add(&index, slot, hash, pair)) {
                status = MR_NO_MEMORY;
                break;
            }
        }
        add_figures(totals->pair_figures + pair * MR_BELOW, below + n * MR_BELOW, MR_BELOW);
    }
    entry_index_free(&index);
    free(below);
    return status;
}

/* The leak depth may be past any path's depth: a chain is as long as its path. */
static int write_chains(const struct mr_calls *calls, unsigned depth, struct mr_totals *totals)
{
    size_t length = 0;
    for (size_t leak = 0; leak < totals->leak_count; leak++) {
        unsigned step = 0;
        for (int64_t node = totals->leak_node[leak]; node >= 0 && step < depth; node = calls->parent[node])
            step++;
        length += step;
    }
    totals->leak_chain = malloc((length ? length : 1) * sizeof *totals->leak_chain);
    totals->leak_chain_end = malloc((totals->leak_count ? totals->leak_count : 1) * sizeof *totals->leak_chain_end);
    if (!totals->leak_chain || !totals->leak_chain_end)
        return MR_NO_MEMORY;
    size_t at = 0;
    for (size_t leak = 0; leak < totals->leak_count; leak++) {
        unsigned step = 0;
        for (int64_t node = totals->leak_node[leak]; node >= 0 && step < depth; node = calls->parent[node], step++)
            totals->leak_chain[at++] = calls->address[node];
        totals->leak_chain_end[leak] = at;
    }
    return MR_OK;
}

int mr_totals_make(const struct mr_calls *calls, unsigned leak_depth, int call_graph, struct mr_totals **out)
{
    *out = NULL;
    struct mr_totals *totals = calloc(1, sizeof *totals);
    if (!totals)
        return MR_NO_MEMORY;
    /* At most one site and one chain per path, one pair per node. */
    size_t paths = calls->path_count ? calls->path_count : 1, nodes = calls->node_count ? calls->node_count : 1;
    totals->site_address = malloc(paths * sizeof *totals->site_address);
    totals->site_figures = calloc(paths * MR_FIGURES, sizeof *totals->site_figures);
    totals->leak_node = malloc(paths * sizeof *totals->leak_node);
    totals->leak_figures = calloc(paths * LEAK_FIGURES, sizeof *totals->leak_figures);
    totals->pair_caller = malloc(nodes * sizeof *totals->pair_caller);
    totals->pair_callee = malloc(nodes * sizeof *totals->pair_callee);
    totals->pair_figures = calloc(nodes * MR_BELOW, sizeof *totals->pair_figures);
    int status = MR_NO_MEMORY;
    if (totals->site_address && totals->site_figures && totals->leak_node && totals->leak_figures &&
        totals->pair_caller && totals->pair_callee && totals->pair_figures) {
        status = add_sites(calls, totals);
        if (status == MR_OK)
            status = add_leaks(calls, leak_depth, totals);
        if (status == MR_OK)
            status = write_chains(calls, leak_depth, totals);
        if (status == MR_OK)
            status = add_pairs(calls, call_graph, totals);
    }
    if (status != MR_OK) {
        mr_totals_free(totals);
        return status;
    }
    *out = totals;
    return MR_OK;
}
