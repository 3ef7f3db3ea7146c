/* libmprof-reduce: the reducer's loops over a data file's call path tree
 * (mprof(5) NODE and PATH), in C.  A big program's file holds hundreds of
 * thousands of nodes; walking them one Python object at a time made the
 * reduction cost seconds, so the Python reducer (src/mprof/reducer/core.py)
 * hands this library the payloads and the symbolized addresses, and reads
 * back arrays.  Nothing here knows a name: functions and files are numbers
 * the caller chose.  The library has no global state: threads may call it
 * at once on objects of their own (ctypes lets go of Python's lock). */
#ifndef MPROF_REDUCE_H
#define MPROF_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#define MR_EXPORT __attribute__((visibility("default")))

/* A path's figures: PATH's, in its order (allocations, frees, bytes by
 * size class (4), bytes freed by class (4), temporaries, peak blocks, peak
 * bytes), then LEAK's blocks and bytes of each leak kind (8; 0 where the
 * file has none), which mr_calls_kinds sets. */
#define MR_PATH_FIGURES 13
#define MR_KIND_FIGURES 8
#define MR_FIGURES (MR_PATH_FIGURES + MR_KIND_FIGURES)
/* What a node passes up to its callers: allocations and bytes by class. */
#define MR_BELOW 5

/* What failed; MR_CORRUPT leaves the explanation to the Python reader,
 * which names the entry and the field. */
enum mr_status { MR_OK = 0, MR_CORRUPT = 1, MR_NO_MEMORY = 2, MR_DATABASE = 3, MR_OVERFLOW = 4 };

/* One data file's call paths, decoded. */
struct mr_calls {
    size_t node_count;
    int64_t *parent;          /* -1: the node's parent is the empty path */
    uint32_t *address;        /* an index into the file's ADDR table */
    size_t path_count;
    int64_t *path_node;       /* -1: the empty path */
    uint64_t *figures;        /* MR_FIGURES per path */
};

MR_EXPORT int mr_calls_decode(const uint8_t *nodes, size_t nodes_size, const uint8_t *paths, size_t paths_size,
                              uint64_t address_count, uint64_t max_depth, struct mr_calls **out);
MR_EXPORT void mr_calls_free(struct mr_calls *calls);
/* Sets the leak kinds' figures (MR_KIND_FIGURES each, values one path after
 * another) of the count paths path[] names, indices the Python reader
 * checked (sections.py). */
MR_EXPORT void mr_calls_kinds(struct mr_calls *calls, size_t count, const uint64_t *path, const uint64_t *values);
/* Sets used[a] for each address index a a node names. */
MR_EXPORT void mr_calls_used(const struct mr_calls *calls, uint8_t *used);


/* A leak chain's figures: allocations, frees, bytes, bytes freed, and the
 * leak kinds' blocks and bytes. */
#define MR_LEAK_FIGURES (4 + MR_KIND_FIGURES)

/* What the tree adds up to (the paper's direct sites, partial leak chains
 * and caller/callee pairs), each list in the order its keys first came. */
struct mr_totals {
    size_t site_count;
    uint32_t *site_address;
    uint64_t *site_figures;   /* MR_FIGURES each */
    size_t leak_count;
    int64_t *leak_node;       /* the innermost node of a path with this chain; -1: the empty chain */
    uint32_t *leak_chain;     /* each chain's address indices, innermost first, one chain after another */
    uint64_t *leak_chain_end; /* where each chain's indices end in leak_chain */
    uint64_t *leak_figures;   /* MR_LEAK_FIGURES each */
    size_t pair_count;
    uint32_t *pair_caller;
    uint32_t *pair_callee;
    uint64_t *pair_figures;   /* MR_BELOW each */
};

MR_EXPORT int mr_totals_make(const struct mr_calls *calls, unsigned leak_depth, int call_graph,
                             struct mr_totals **out);
MR_EXPORT void mr_totals_free(struct mr_totals *totals);

/* A symbolized frame as the caller numbered it. */
struct mr_frame {
    uint32_t function;
    uint32_t file;
    uint32_t line;
    uint32_t inlined;
};

/* The frames of every file's paths merged into one tree: a node is a
 * function called from its parent node's frame at one file and line. */
struct mr_tree;

MR_EXPORT struct mr_tree *mr_tree_new(void);
MR_EXPORT void mr_tree_free(struct mr_tree *tree);
/* Adds one file's paths.  For each address index a, its frames are
 * frames[first[a]] .. frames[first[a + 1] - 1], outermost first; from_main[a]
 * says they start at main (not inlined), so that whatever called the
 * address is start-up code.  Functions are numbered below function_count;
 * taken receives, for each function of a frame the tree took (not of
 * start-up code) in the order the nodes first took it, the index in frames
 * of that first frame (the caller names a function after the first frame
 * seen of it), and *taken_count how many. */
MR_EXPORT int mr_tree_add(struct mr_tree *tree, const struct mr_calls *calls, const uint32_t *first,
                          const struct mr_frame *frames, const uint8_t *from_main, size_t function_count,
                          uint32_t *taken, size_t *taken_count);

/* One file's call graph (paper, section 3.3): what the functions allocated
 * directly, the allocation sites by (module, offset) of their innermost
 * frame, the leak chains by their frames, and the edges between functions
 * (each pair of addresses once per occurrence in a path, the calls into
 * inlined frames with them, start-up code above main left out).  The
 * frames are those given to mr_tree_add; site_module[a] and site_offset[a]
 * say where address a's innermost frame is.  Lists come in the order their
 * keys first came. */
struct mr_graph {
    size_t function_count;
    uint64_t *self;            /* by function: calls, frees, bytes (4), freed (4) */
    size_t site_count;
    uint32_t *site_module;
    uint64_t *site_offset;
    uint32_t *site_frame;      /* the frame (an index into frames) that made the site */
    uint64_t *site_figures;    /* MR_FIGURES each */
    size_t leak_count;
    uint64_t *leak_end;        /* where each leak's frames end in leak_frames */
    uint32_t *leak_frames;     /* indices into frames, innermost first */
    uint64_t *leak_figures;    /* MR_LEAK_FIGURES each */
    size_t edge_count;
    uint32_t *edge_caller;     /* functions */
    uint32_t *edge_callee;
    uint64_t *edge_figures;    /* calls, bytes by class (4) */
    size_t taken_count;
    uint32_t *taken;           /* indices into frames of each function's first frame, in the order taken */
};

/* MR_OVERFLOW: an edge's figures pass 64 bits (the pairs of deep recursion
 * each carry a path's figures again). */
MR_EXPORT int mr_graph_make(const struct mr_calls *calls, unsigned leak_depth, int call_graph, const uint32_t *first,
                            const struct mr_frame *frames, const uint8_t *from_main, const uint32_t *site_module,
                            const uint64_t *site_offset, size_t function_count, struct mr_graph **out);
MR_EXPORT void mr_graph_free(struct mr_graph *graph);

/* The tree as the database holds it: the nodes some path ends under,
 * numbered from 1 in the order they were made (parents first), and the
 * paths in the order of their nodes' numbers.  What the runtime-block
 * rules need of a path's frames is its chain: its innermost function, the
 * groups of every function on it and its innermost function outside
 * libstdc++; paths share few chains, so each is told once.  It reads the
 * tree's figures, and lives no longer than the tree. */
struct mr_numbered {
    const struct mr_tree *tree;
    size_t node_count;
    uint64_t *node_parent;    /* a number, 0: outermost */
    struct mr_frame *node_frame;
    size_t path_count;
    uint64_t *path_node;      /* a number, 0: the empty path; in increasing order */
    size_t *path_order;       /* the path's place in the tree */
    uint32_t *path_chain;     /* an index into the chains */
    size_t chain_count;
    int64_t *chain_innermost; /* a function, -1 for the empty path's */
    uint32_t *chain_groups;   /* the bits of groups[] of every function on it */
    int64_t *chain_outside;   /* its innermost function f with outside[f] set, or -1 */
};

/* groups and outside are indexed by function number, function_count long. */
MR_EXPORT int mr_tree_number(const struct mr_tree *tree, const uint32_t *groups, const uint8_t *outside,
                             size_t function_count, struct mr_numbered **out);
MR_EXPORT void mr_numbered_free(struct mr_numbered *numbered);

/* A text of the program's world: utf8 0 when its bytes are not UTF-8. */
struct mr_text {
    const char *bytes;
    size_t size;
    int utf8;
};

/* Inserts the numbered tree into the tables path_nodes and paths of the
 * database file, whose schema is made and which no one else is writing:
 * mr_write_start starts a thread that writes them, works out the keys the
 * paths are merged and sorted by meanwhile, and returns; mr_write_finish
 * waits for the write and says how it went (MR_DATABASE: SQLite's message
 * is in error).  function_ids, function_rank (the functions' order by
 * their names, equal for equal names) and files are by the frames'
 * numbers; runtime[c] is the index in runtimes of what keeps the blocks of
 * chain c's paths on purpose.  All of them, and numbered, must last until
 * mr_write_finish, which every mr_write_start that returned MR_OK needs. */
struct mr_write;
MR_EXPORT int mr_write_start(const struct mr_numbered *numbered, const char *database, const int64_t *function_ids,
                             const uint32_t *function_rank, const struct mr_text *files, const uint32_t *runtime,
                             const struct mr_text *runtimes, struct mr_write **out);
MR_EXPORT int mr_write_finish(struct mr_write *job, char *error, size_t error_size);
/* For a report's flame graphs, over a tree of count nodes by index, each
 * node's parent an index before its own or -1 for an outermost node.
 * mr_subtree_sums adds each node's value into its ancestors' (MR_OVERFLOW:
 * past 64 bits, or a parent not before its child).  mr_children lays out
 * each node's children, in index order: those of node n (of the outermost
 * nodes, for n = -1) are child[start[n + 1]] up to child[start[n + 2]];
 * start holds count + 2 entries, child count. */
MR_EXPORT int mr_subtree_sums(const int64_t *parent, size_t count, int64_t *value);
MR_EXPORT void mr_children(const int64_t *parent, size_t count, uint64_t *start, uint64_t *child);

/* A path's figures, MR_FIGURES of them, in the tree (for the writer). */
const uint64_t *mr_tree_path_figures(const struct mr_tree *tree, size_t path);

#endif
