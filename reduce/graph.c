/* One data file's call graph from its totals (totals.c) and its addresses'
 * frames: the paper's section 3.3, with inlined functions as functions of
 * their own and start-up code above main left out.  The Python reducer
 * (callgraph.py) merges the files' graphs, names the functions and merges
 * the recursive cycles. */
#include "reduce.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "index.h"

#define SELF 10 /* calls, frees, bytes (4), freed (4) */
#define LEAK_FIGURES MR_LEAK_FIGURES

struct builder {
    const struct mr_calls *calls;
    const uint32_t *first;
    const struct mr_frame *frames;
    const uint8_t *from_main;
    const uint32_t *site_module;
    const uint64_t *site_offset;
    size_t function_count;
    uint8_t *seen;            /* by function: taken already */
    struct mr_graph *graph;
    size_t leak_frames_capacity, edge_capacity;
    struct entry_index sites, leaks, edges;
    uint32_t *chain;          /* a leak chain's frames, being gathered */
    size_t chain_capacity;
};

void mr_graph_free(struct mr_graph *graph)
{
    if (!graph)
        return;
    free(graph->self);
    free(graph->site_module);
    free(graph->site_offset);
    free(graph->site_frame);
    free(graph->site_figures);
    free(graph->leak_end);
    free(graph->leak_frames);
    free(graph->leak_figures);
    free(graph->edge_caller);
    free(graph->edge_callee);
    free(graph->edge_figures);
    free(graph->taken);
    free(graph);
}

static size_t frame_count(const struct builder *b, uint32_t address)
{
    return b->first[address + 1] - b->first[address];
}

/* Where address's frames start: the outermost, from main on. */
static uint32_t outermost(const struct builder *b, uint32_t address)
{
    return b->first[address];
}

static uint32_t innermost(const struct builder *b, uint32_t address)
{
    return b->first[address + 1] - 1;
}

static uint32_t function_of(const struct builder *b, uint32_t frame)
{
    return b->frames[frame].function;
}

/* A function the graph names, first at this frame. */
static void take(struct builder *b, uint32_t frame)
{
    uint32_t function = function_of(b, frame);
    if (!b->seen[function]) {
        b->seen[function] = 1;
        b->graph->taken[b->graph->taken_count++] = frame;
    }
}

static int add_edge(struct builder *b, uint32_t caller, uint32_t callee, const uint64_t *figures)
{
    struct mr_graph *graph = b->graph;
    uint64_t hash = mix((uint64_t)caller << 32 | callee);
    size_t slot;
    bool found;
    ENTRY_INDEX_FIND(&b->edges, hash, edge, graph->edge_caller[edge] == caller && graph->edge_callee[edge] == callee,
                     slot, found);
    size_t edge = found ? ENTRY_INDEX_AT(&b->edges, slot) : graph->edge_count;
    if (!found) {
        size_t capacity = b->edge_capacity;
        if (!grow((void **)&graph->edge_caller, &capacity, edge, sizeof *graph->edge_caller))
            return MR_NO_MEMORY;
        capacity = b->edge_capacity;
        if (!grow((void **)&graph->edge_callee, &capacity, edge, sizeof *graph->edge_callee))
            return MR_NO_MEMORY;
        capacity = b->edge_capacity;
        if (!grow((void **)&graph->edge_figures, &capacity, edge, MR_BELOW * sizeof *graph->edge_figures))
            return MR_NO_MEMORY;
        b->edge_capacity = capacity;
        graph->edge_caller[edge] = caller;
        graph->edge_callee[edge] = callee;
        memset(graph->edge_figures + edge * MR_BELOW, 0, MR_BELOW * sizeof *graph->edge_figures);
        graph->edge_count++;
        if (!entry_index_add(&b->edges, slot, hash, edge))
            return MR_NO_MEMORY;
    }
    uint64_t *into = graph->edge_figures + edge * MR_BELOW;
    for (unsigned f = 0; f < MR_BELOW; f++)
        if (__builtin_add_overflow(into[f], figures[f], &into[f]))
            return MR_OVERFLOW;
    return MR_OK;
}

/* The calls from each of address's frames into the one inlined into it. */
static int add_inline_edges(struct builder *b, uint32_t address, const uint64_t *figures)
{
    for (uint32_t frame = outermost(b, address); frame < innermost(b, address); frame++) {
        take(b, frame);
        take(b, frame + 1);
        int status = add_edge(b, function_of(b, frame), function_of(b, frame + 1), figures);
        if (status != MR_OK)
            return status;
    }
    return MR_OK;
}

static int add_sites(struct builder *b, const struct mr_totals *totals)
{
    struct mr_graph *graph = b->graph;
    for (size_t s = 0; s < totals->site_count; s++) {
        uint32_t address = totals->site_address[s];
        if (!frame_count(b, address))
            return MR_CORRUPT;
        uint32_t frame = innermost(b, address);
        take(b, frame);
        const uint64_t *figures = totals->site_figures + s * MR_FIGURES;
        uint64_t *self = graph->self + (size_t)function_of(b, frame) * SELF;
        for (unsigned f = 0; f < SELF; f++)
            self[f] += figures[f]; /* no more than the file's column totals */
        uint32_t module = b->site_module[address];
        uint64_t offset = b->site_offset[address];
        uint64_t hash = mix(mix(module) ^ offset);
        size_t slot;
        bool found;
        ENTRY_INDEX_FIND(&b->sites, hash, site, graph->site_module[site] == module && graph->site_offset[site] == offset,
                         slot, found);
        size_t site = found ? ENTRY_INDEX_AT(&b->sites, slot) : graph->site_count;
        if (!found) {
            graph->site_module[site] = module;
            graph->site_offset[site] = offset;
            graph->site_frame[site] = frame;
            graph->site_count++;
            if (!entry_index_add(&b->sites, slot, hash, site))
                return MR_NO_MEMORY;
        }
        uint64_t *into = graph->site_figures + site * MR_FIGURES;
        for (unsigned f = 0; f < MR_FIGURES; f++)
            into[f] += figures[f];
        for (uint32_t outer = outermost(b, address); outer < frame; outer++)
            take(b, outer);
    }
    return MR_OK;
}

static bool same_frame(const struct mr_frame *a, const struct mr_frame *b)
{
    return a->function == b->function && a->file == b->file && a->line == b->line;
}

/* Leak number leak has the frames gathered in b->chain. */
static bool same_leak(const struct builder *b, uint64_t leak, size_t length)
{
    const struct mr_graph *graph = b->graph;
    size_t from = leak ? graph->leak_end[leak - 1] : 0;
    if (graph->leak_end[leak] - from != length)
        return false;
    for (size_t n = 0; n < length; n++)
        if (!same_frame(&b->frames[graph->leak_frames[from + n]], &b->frames[b->chain[n]]))
            return false;
    return true;
}

/* A leak is named by its chain's frames (function, file and line), innermost
 * first, from main on: the frames of addresses outside the outermost one
 * that reaches main are start-up code. */
static int add_leaks(struct builder *b, const struct mr_totals *totals)
{
    struct mr_graph *graph = b->graph;
    for (size_t leak = 0; leak < totals->leak_count; leak++) {
        size_t start = leak ? totals->leak_chain_end[leak - 1] : 0, end = totals->leak_chain_end[leak];
        /* From the outermost address whose frames reach main, if one does. */
        size_t outer_end = end;
        for (size_t at = end; at-- > start;)
            if (b->from_main[totals->leak_chain[at]]) {
                outer_end = at + 1;
                break;
            }
        size_t length = 0;
        for (size_t at = start; at < outer_end; at++) {
            uint32_t address = totals->leak_chain[at];
            for (uint32_t frame = innermost(b, address) + 1; frame-- > outermost(b, address);) {
                if (!grow((void **)&b->chain, &b->chain_capacity, length, sizeof *b->chain))
                    return MR_NO_MEMORY;
                b->chain[length++] = frame;
            }
        }
        uint64_t hash = mix(length);
        for (size_t n = 0; n < length; n++) {
            const struct mr_frame *frame = &b->frames[b->chain[n]];
            hash = mix(hash ^ frame->function ^ (uint64_t)frame->file << 32) ^ frame->line;
            take(b, b->chain[n]);
        }
        size_t slot;
        bool found;
        ENTRY_INDEX_FIND(&b->leaks, hash, candidate, same_leak(b, candidate, length), slot, found);
        size_t number = found ? ENTRY_INDEX_AT(&b->leaks, slot) : graph->leak_count;
        if (!found) {
            size_t used = number ? graph->leak_end[number - 1] : 0;
            for (size_t n = 0; n < length; n++) {
                if (!grow((void **)&graph->leak_frames, &b->leak_frames_capacity, used, sizeof *graph->leak_frames))
                    return MR_NO_MEMORY;
                graph->leak_frames[used++] = b->chain[n];
            }
            graph->leak_end[number] = used;
            graph->leak_count++;
            if (!entry_index_add(&b->leaks, slot, hash, number))
                return MR_NO_MEMORY;
        }
        uint64_t *into = graph->leak_figures + number * LEAK_FIGURES;
        for (unsigned f = 0; f < LEAK_FIGURES; f++)
            into[f] += totals->leak_figures[leak * LEAK_FIGURES + f];
    }
    return MR_OK;
}

static int by_callee(const void *a, const void *b, void *pairs)
{
    const uint32_t *callee = pairs;
    uint32_t x = callee[*(const uint32_t *)a], y = callee[*(const uint32_t *)b];
    return (x > y) - (x < y);
}

/* The addresses in frames that call main, directly or not: start-up code. */
static int mark_above_main(const struct builder *b, const struct mr_totals *totals, size_t address_count,
                           uint8_t *above)
{
    size_t pairs = totals->pair_count;
    uint32_t *by = malloc((pairs ? pairs : 1) * sizeof *by);
    uint32_t *work = malloc((address_count ? address_count : 1) * sizeof *work);
    if (!by || !work) {
        free(by);
        free(work);
        return MR_NO_MEMORY;
    }
    for (size_t p = 0; p < pairs; p++)
        by[p] = (uint32_t)p;
    qsort_r(by, pairs, sizeof *by, by_callee, totals->pair_callee);
    size_t waiting = 0;
    for (size_t p = 0; p < pairs; p++) {
        uint32_t caller = totals->pair_caller[p];
        if (b->from_main[totals->pair_callee[p]] && !above[caller]) {
            above[caller] = 1;
            work[waiting++] = caller;
        }
    }
    while (waiting) {
        uint32_t callee = work[--waiting];
        /* The pairs whose callee this is: a run of the sorted ones. */
        size_t low = 0, high = pairs;
        while (low < high) {
            size_t middle = (low + high) / 2;
            if (totals->pair_callee[by[middle]] < callee)
                low = middle + 1;
            else
                high = middle;
        }
        for (size_t p = low; p < pairs && totals->pair_callee[by[p]] == callee; p++) {
            uint32_t caller = totals->pair_caller[by[p]];
            if (!above[caller]) {
                above[caller] = 1;
                work[waiting++] = caller;
            }
        }
    }
    free(by);
    free(work);
    return MR_OK;
}

static int add_pairs(struct builder *b, const struct mr_totals *totals, size_t address_count)
{
    uint8_t *above = calloc(address_count ? address_count : 1, 1);
    uint8_t *incoming = calloc(address_count ? address_count : 1, 1);
    /* Each caller's calls and bytes out, in the order callers came. */
    uint64_t *outgoing = calloc((address_count ? address_count : 1) * MR_BELOW, sizeof *outgoing);
    uint32_t *callers = malloc((address_count ? address_count : 1) * sizeof *callers);
    uint8_t *is_caller = calloc(address_count ? address_count : 1, 1);
    uint8_t *overflowed = calloc(address_count ? address_count : 1, 1);
    size_t caller_count = 0;
    int status = MR_NO_MEMORY;
    if (!above || !incoming || !outgoing || !callers || !is_caller || !overflowed)
        goto done;
    status = mark_above_main(b, totals, address_count, above);
    for (size_t p = 0; status == MR_OK && p < totals->pair_count; p++)
        if (!above[totals->pair_caller[p]])
            incoming[totals->pair_callee[p]] = 1;
    for (size_t p = 0; status == MR_OK && p < totals->pair_count; p++) {
        uint32_t caller = totals->pair_caller[p], callee = totals->pair_callee[p];
        if (above[caller])
            continue;
        if (!frame_count(b, caller) || !frame_count(b, callee)) {
            status = MR_CORRUPT;
            break;
        }
        const uint64_t *figures = totals->pair_figures + p * MR_BELOW;
        uint32_t from = innermost(b, caller), to = outermost(b, callee);
        take(b, from);
        take(b, to);
        status = add_edge(b, function_of(b, from), function_of(b, to), figures);
        if (status == MR_OK)
            status = add_inline_edges(b, callee, figures);
        if (!is_caller[caller]) {
            is_caller[caller] = 1;
            callers[caller_count++] = caller;
        }
        for (unsigned f = 0; f < MR_BELOW; f++)
            if (__builtin_add_overflow(outgoing[(size_t)caller * MR_BELOW + f], figures[f],
                                       &outgoing[(size_t)caller * MR_BELOW + f]))
                overflowed[caller] = 1;
    }
    /* A chain's outermost address is no pair's callee: its inlined frames
     * are passed by every allocation that leaves it.  (A sum past 64 bits
     * matters only where an edge would carry it.) */
    for (size_t n = 0; status == MR_OK && n < caller_count; n++) {
        uint32_t caller = callers[n];
        if (incoming[caller])
            continue;
        if (overflowed[caller] && frame_count(b, caller) > 1)
            status = MR_OVERFLOW;
        else
            status = add_inline_edges(b, caller, outgoing + (size_t)caller * MR_BELOW);
    }
    for (size_t s = 0; status == MR_OK && s < totals->site_count; s++) {
        uint32_t address = totals->site_address[s];
        if (incoming[address])
            continue;
        const uint64_t *site = totals->site_figures + s * MR_FIGURES;
        uint64_t figures[MR_BELOW] = {site[0], site[2], site[3], site[4], site[5]};
        status = add_inline_edges(b, address, figures);
    }
done:
    free(above);
    free(incoming);
    free(outgoing);
    free(callers);
    free(is_caller);
    free(overflowed);
    return status;
}

int mr_graph_make(const struct mr_calls *calls, unsigned leak_depth, int call_graph, const uint32_t *first,
                  const struct mr_frame *frames, const uint8_t *from_main, const uint32_t *site_module,
                  const uint64_t *site_offset, size_t function_count, struct mr_graph **out)
{
    *out = NULL;
    struct mr_totals *totals;
    int status = mr_totals_make(calls, leak_depth, call_graph, &totals);
    if (status != MR_OK)
        return status;
    size_t address_count = 0; /* one past the highest address index a node names */
    for (size_t n = 0; n < calls->node_count; n++)
        if (calls->address[n] >= address_count)
            address_count = (size_t)calls->address[n] + 1;
    struct builder b = {calls, first, frames, from_main, site_module, site_offset, function_count, NULL, NULL,
                        0, 0, {0}, {0}, {0}, NULL, 0};
    struct mr_graph *graph = calloc(1, sizeof *graph);
    b.graph = graph;
    b.seen = calloc(function_count ? function_count : 1, 1);
    status = MR_NO_MEMORY;
    if (!graph || !b.seen || !entry_index_init(&b.sites) || !entry_index_init(&b.leaks) ||
        !entry_index_init(&b.edges))
        goto done;
    size_t sites = totals->site_count ? totals->site_count : 1, leaks = totals->leak_count ? totals->leak_count : 1;
    graph->function_count = function_count;
    graph->self = calloc((function_count ? function_count : 1) * SELF, sizeof *graph->self);
    graph->site_module = malloc(sites * sizeof *graph->site_module);
    graph->site_offset = malloc(sites * sizeof *graph->site_offset);
    graph->site_frame = malloc(sites * sizeof *graph->site_frame);
    graph->site_figures = calloc(sites * MR_FIGURES, sizeof *graph->site_figures);
    graph->leak_end = malloc(leaks * sizeof *graph->leak_end);
    graph->leak_figures = calloc(leaks * LEAK_FIGURES, sizeof *graph->leak_figures);
    graph->taken = malloc((function_count ? function_count : 1) * sizeof *graph->taken);
    if (!graph->self || !graph->site_module || !graph->site_offset || !graph->site_frame || !graph->site_figures ||
        !graph->leak_end || !graph->leak_figures || !graph->taken)
        goto done;
    for (size_t f = first[0]; f < first[address_count]; f++)
        if (frames[f].function >= function_count) {
            status = MR_CORRUPT;
            goto done;
        }
    status = add_sites(&b, totals);
    if (status == MR_OK)
        status = add_leaks(&b, totals);
    if (status == MR_OK && call_graph)
        status = add_pairs(&b, totals, address_count);
done:
    mr_totals_free(totals);
    free(b.seen);
    free(b.chain);
    entry_index_free(&b.sites);
    entry_index_free(&b.leaks);
    entry_index_free(&b.edges);
    if (status != MR_OK)
        mr_graph_free(graph);
    else
        *out = graph;
    return status;
}
