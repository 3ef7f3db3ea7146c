/* A malloc-heavy program with an arena of its own: each step makes a node
 * with malloc and an edge from the arena; every 1,000 steps the nodes are
 * freed and the arena reset.  Built three ways, it measures what the API
 * costs a program when mprof is not loaded, and what a pool's object costs
 * under mprof next to a malloc'ed block's (issue 33):
 *   objects            the arena unannotated;
 *   objects_annotated  -DANNOTATE: its objects announced with mprof.h;
 *   objects_malloc     -DEDGES_FROM_MALLOC: the edges malloc'ed and freed
 *                      with the nodes, no arena.
 *
 *     objects COUNT */
#include <stdlib.h>
#include <string.h>

#ifdef ANNOTATE
#include "mprof.h"
#else
#define MPROF_POOL_CREATE(anchor, name) ((void)0)
#define MPROF_POOL_ALLOC(anchor, object, size) ((void)0)
#define MPROF_POOL_RESET(anchor) ((void)0)
#define MPROF_BACKING(allocation) (allocation)
#endif

#define BATCH 1000
#define NODE 48
#define EDGE 24

static struct {
    char *base;
    size_t used;
} arena;

__attribute__((noinline)) static void *make_node(void)
{
    return malloc(NODE);
}

__attribute__((noinline)) static void *make_edge(void)
{
#ifdef EDGES_FROM_MALLOC
    return malloc(EDGE);
#endif
    void *edge = arena.base + arena.used;
    arena.used += 32;
    MPROF_POOL_ALLOC(&arena, edge, EDGE);
    return edge;
}

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : 1000000;
    arena.base = MPROF_BACKING(malloc(BATCH * 32));
    MPROF_POOL_CREATE(&arena, "edges");
    static void *nodes[BATCH], *edges[BATCH];
    for (long done = 0; done < count; done += BATCH) {
        for (int i = 0; i < BATCH; i++) {
            nodes[i] = make_node();
            edges[i] = memset(make_edge(), 0, EDGE);
        }
        for (int i = 0; i < BATCH; i++) {
            free(nodes[i]);
#ifdef EDGES_FROM_MALLOC
            free(edges[i]);
#else
            (void)edges[i];
#endif
        }
        arena.used = 0;
        MPROF_POOL_RESET(&arena);
    }
    free(arena.base);
    return 0;
}
