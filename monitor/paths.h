/* The call path tree: every distinct call path an allocation was made from,
 * shared by all threads.  A node is a path: its parent's path and one more
 * return address, so a path of any depth costs one node more than the
 * paths it shares its callers with.  The node of an allocating path gets a
 * dense path id as well, so that a live block needs only 24 bits to name
 * its path. */
#ifndef MPROF_PATHS_H
#define MPROF_PATHS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Path ids past this many share the last; their figures are merged.  (A
 * test sets a small one on the compiler's command line.) */
#ifndef PATH_ID_LIMIT
#define PATH_ID_LIMIT ((1u << 24) - 1)
#endif
/* The record of a block that is a pool's backing memory (pools.h): in no
 * figure, and not a path id, which stay below PATH_ID_LIMIT. */
#define BACKING_RECORD ((UINT32_C(1) << 24) - 1)
_Static_assert(PATH_ID_LIMIT <= BACKING_RECORD, "path ids stay clear of the backing record");
/* No node or path: out of memory. */
#define PATH_NONE UINT32_MAX

struct path_node {
    uintptr_t address;
    uint32_t parent;
    uint32_t id;
    /* 1 + the id of the path that ends here, 0 until an allocation does;
     * set once, under the registry's lock, read by every thread. */
    atomic_uint_least32_t path;
};

void paths_init(void);
/* The empty path, the parent of every outermost frame: the first node this
 * process made. */
uint32_t paths_root(void);
/* A path's fold: its addresses, from the outermost in, folded with
 * fold_word (hash.h) into this seed, the root's.  The registry finds a node
 * by its path's fold, which a caller knows for a whole chain before it
 * looks up any of its nodes: so it can load their slots at once. */
#define PATHS_FOLD_SEED UINT64_C(0x243F6A8885A308D3)

/* The id of the node of address called from the path parent, whose fold
 * (with address) is folded, made on first use; PATH_NONE when out of
 * memory.  Without the lock when it was made before.  threads_started (set
 * before a second thread probes) lets an outgrown table be unmapped while
 * it is false; NULL: never. */
uint32_t paths_node_id(uint32_t parent, uintptr_t address, uint64_t folded, const atomic_bool *threads_started);
/* Starts loading where paths_node_id would look for the node of fold
 * folded. */
void paths_prefetch(uint64_t folded);
/* The id of the path that ends at node, made on first use; PATH_NONE when
 * out of memory. */
uint32_t paths_path_of_id(uint32_t node);

/* The writer of a data file holds the registry still while it reads the
 * tree with the paths_held_ functions; bounded (a signal handler's write)
 * gives up rather than wait on a lock its own thread may hold. */
bool paths_hold(bool bounded);
void paths_release(void);
uint32_t paths_held_node_count(void);
const struct path_node *paths_held_node(uint32_t id);
uint32_t paths_held_node_of_path(uint32_t path);

/* Gives every address in [start, end) of every node made by this process
 * the tag bits (see retag.h), and rehashes.  Callers hold every thread
 * state's lock, which come before the registry's. */
void paths_retag(uintptr_t start, uintptr_t end, uintptr_t tag_bits);
/* How many paths and nodes there are now: more may come at once. */
uint32_t paths_count(void);
uint32_t paths_node_count(void);
/* Paths below this were made before the last fork, by the parent. */
uint32_t paths_first_own_path(void);

void paths_fork_prepare(void);
void paths_fork_parent(void);
/* The child starts numbering afresh above the parent's ids. */
void paths_fork_child(void);

#endif
