/* The call path tree's registry (see paths.h). */
#include "paths.h"

#include "arena.h"
#include "compiler.h"
#include "hash.h"
#include "lock.h"

/* Nodes live in chunks that never move, chunk k holding CHUNK_FIRST << k of
 * them, so a node is found from its id without the lock (paths_node_at). */
#define CHUNK_FIRST_BITS 10
#define CHUNK_FIRST (UINT64_C(1) << CHUNK_FIRST_BITS)
#define CHUNK_COUNT (33 - CHUNK_FIRST_BITS) /* enough for every 32-bit id */

/* A slot of the table of nodes by (parent, address): the key beside the id,
 * so that a probe reads the slot alone.  A slot's key is written before its
 * id, which publishes it (release), and never changes after: readers load
 * the id (acquire) and then may read the key.  Id 0, the first process's
 * root, is never in the table and marks an empty slot. */
struct node_slot {
    uintptr_t address;
    uint32_t parent;
    atomic_uint_least32_t id;
};

struct node_table {
    unsigned bits; /* log2 of the slot count */
    uint64_t used;
    struct node_slot slots[];
};

/* Guarded by lock, except what paths_node_id and node_at read without
 * it: table (published with a release store, a table in full before its
 * pointer), its slots (see node_slot) and the chunks (published before any
 * id of theirs is).  The hot path comes to the lock only to add a node or
 * give a path its id. */
static struct {
    spinlock_t lock;
    struct node_table *_Atomic table;
    struct path_node *_Atomic chunks[CHUNK_COUNT];
    uint32_t node_count;
    uint32_t *path_nodes;          /* the node of each path id */
    uint32_t path_capacity, path_count;
    uint32_t first_own_node, first_own_path;
} registry = {.lock = SPINLOCK_INIT};

static size_t table_size(unsigned bits)
{
    return sizeof(struct node_table) + (sizeof(struct node_slot) << bits);
}

static inline unsigned chunk_of(uint32_t id, uint64_t *offset)
{
    uint64_t n = (uint64_t)id + CHUNK_FIRST;
    unsigned k = (unsigned)(63 - __builtin_clzll(n)) - CHUNK_FIRST_BITS;
    *offset = n - (CHUNK_FIRST << k);
    return k;
}

/* The ids a thread holds came to it through an acquire of the slot or the
 * path that named them, after their chunk was published: relaxed. */
MONITOR_TEXT_INLINE static struct path_node *node_at(uint32_t id)
{
    uint64_t offset;
    unsigned k = chunk_of(id, &offset);
    return atomic_load_explicit(&registry.chunks[k], memory_order_relaxed) + offset;
}

static bool grow(void *array_pointer, uint32_t *capacity, size_t entry_size)
{
    void **array = array_pointer;
    uint32_t new_capacity = *capacity ? *capacity * 2 : 1024;
    void *grown = *array ? region_grow(*array, *capacity * entry_size, new_capacity * entry_size)
                         : region_map(new_capacity * entry_size);
    if (!grown)
        return false;
    *array = grown;
    *capacity = new_capacity;
    return true;
}

/* Called with the lock held; PATH_NONE when out of memory or ids. */
static uint32_t add_node(uint32_t parent, uintptr_t address)
{
    uint32_t id = registry.node_count;
    if (id == PATH_NONE)
        return PATH_NONE;
    uint64_t offset;
    unsigned k = chunk_of(id, &offset);
    struct path_node *chunk = atomic_load_explicit(&registry.chunks[k], memory_order_relaxed);
    if (!chunk) {
        if (!(chunk = region_map((CHUNK_FIRST << k) * sizeof(struct path_node))))
            return PATH_NONE;
        atomic_store_explicit(&registry.chunks[k], chunk, memory_order_release);
    }
    struct path_node *node = chunk + offset;
    node->address = address;
    node->parent = parent;
    node->id = id;
    atomic_init(&node->path, 0);
    __atomic_store_n(&registry.node_count, id + 1, __ATOMIC_RELAXED); /* paths_node_count reads it unlocked */
    return id;
}

void paths_init(void)
{
    spin_lock(&registry.lock);
    if (!registry.node_count)
        add_node(0, 0); /* the root: no address, never in the table */
    spin_unlock(&registry.lock);
}

uint32_t paths_root(void)
{
    return registry.first_own_node;
}

/* By the fold of the node's path (paths.h): known before its parent's id. */
static inline uint64_t node_hash(uint64_t folded)
{
    return mix64(folded);
}

/* The id of (parent, address) in table, 0 if absent. */
MONITOR_TEXT_INLINE static uint32_t probe(const struct node_table *table, uint64_t hash, uint32_t parent,
                                          uintptr_t address)
{
    uint64_t mask = (UINT64_C(1) << table->bits) - 1;
    for (uint64_t i = hash >> (64 - table->bits);; i = (i + 1) & mask) {
        const struct node_slot *slot = &table->slots[i];
        uint32_t id = atomic_load_explicit(&slot->id, memory_order_acquire);
        if (!id)
            return 0;
        if (slot->address == address && slot->parent == parent)
            return id;
    }
}

/* Writes a slot of a table no reader has yet, or publishes one in a
 * published table. */
static void place(struct node_table *table, uint64_t hash, uint32_t parent, uintptr_t address, uint32_t id)
{
    uint64_t mask = (UINT64_C(1) << table->bits) - 1;
    uint64_t i = hash >> (64 - table->bits);
    while (atomic_load_explicit(&table->slots[i].id, memory_order_relaxed))
        i = (i + 1) & mask;
    table->slots[i].address = address;
    table->slots[i].parent = parent;
    atomic_store_explicit(&table->slots[i].id, id, memory_order_release);
    table->used++;
}

/* A table of at least 2^bits slots holding every node of this process but
 * its root, at most half full with one node more; NULL when out of memory.
 * Called with the lock held. */
static struct node_table *table_of_nodes(unsigned bits)
{
    uint64_t nodes = registry.node_count - registry.first_own_node;
    while ((nodes + 1) * 2 > (UINT64_C(1) << bits))
        bits++;
    /* The folds of the nodes' paths, each its parent's and its address:
     * a parent is made before its children. */
    size_t folds_size = (nodes + 1) * sizeof(uint64_t);
    uint64_t *folds = region_map(folds_size);
    if (!folds)
        return NULL;
    struct node_table *table = region_map(table_size(bits));
    if (!table) {
        region_unmap(folds, folds_size);
        return NULL;
    }
    table->bits = bits;
    uint32_t first = registry.first_own_node;
    folds[0] = PATHS_FOLD_SEED;
    for (uint32_t id = first + 1; id < registry.node_count; id++) {
        const struct path_node *node = node_at(id);
        uint64_t parent_fold = node->parent >= first && node->parent < id ? folds[node->parent - first]
                                                                          : PATHS_FOLD_SEED;
        folds[id - first] = fold_word(parent_fold, node->address);
        place(table, node_hash(folds[id - first]), node->parent, node->address, id);
    }
    region_unmap(folds, folds_size);
    return table;
}

/* Room in the table for one node more, keeping it at most half full; false
 * when out of memory.  Called with the lock held. */
static bool make_room(const atomic_bool *threads_started)
{
    struct node_table *table = atomic_load_explicit(&registry.table, memory_order_relaxed);
    if (table && (table->used + 1) * 2 <= (UINT64_C(1) << table->bits))
        return true;
    struct node_table *grown = table_of_nodes(table ? table->bits + 1 : 10);
    if (!grown)
        return false;
    atomic_store_explicit(&registry.table, grown, memory_order_release);
    /* Another thread may be probing the old table: it is kept, unless no
     * other thread exists (a signal handler does not probe: the thread's
     * recursion guard is up).  A thread sets threads_started before its
     * first probe, and this one publishes the new table before it reads
     * the flag: with the fence, either it sees the flag or that thread
     * sees the new table. */
    atomic_thread_fence(memory_order_seq_cst);
    if (table && threads_started && !atomic_load_explicit(threads_started, memory_order_relaxed))
        region_unmap(table, table_size(table->bits));
    return true;
}

MONITOR_TEXT_INLINE static uint32_t node_id(uint32_t parent, uintptr_t address, uint64_t hash,
                                            const atomic_bool *threads_started)
{
    const struct node_table *table = atomic_load_explicit(&registry.table, memory_order_acquire);
    uint32_t id = table ? probe(table, hash, parent, address) : 0;
    if (likely(id))
        return id;
    spin_lock(&registry.lock);
    /* Another thread may have added it meanwhile, to a table grown since. */
    table = atomic_load_explicit(&registry.table, memory_order_relaxed);
    id = table ? probe(table, hash, parent, address) : 0;
    if (!id) {
        if (make_room(threads_started) && (id = add_node(parent, address)) != PATH_NONE)
            place(atomic_load_explicit(&registry.table, memory_order_relaxed), hash, parent, address, id);
        else
            id = PATH_NONE;
    }
    spin_unlock(&registry.lock);
    return id;
}

MONITOR_TEXT uint32_t paths_node_id(uint32_t parent, uintptr_t address, uint64_t folded,
                                   const atomic_bool *threads_started)
{
    return node_id(parent, address, node_hash(folded), threads_started);
}

/* A racy read of a table that may be replaced meanwhile: prefetching a
 * stale slot is harmless, and an old table is never unmapped while
 * another thread may read it (make_room). */
MONITOR_TEXT void paths_prefetch(uint64_t folded)
{
    const struct node_table *table = atomic_load_explicit(&registry.table, memory_order_acquire);
    if (likely(table))
        __builtin_prefetch(&table->slots[node_hash(folded) >> (64 - table->bits)]);
}

MONITOR_TEXT uint32_t paths_path_of_id(uint32_t id)
{
    const struct path_node *node = node_at(id);
    uint32_t known = atomic_load_explicit(&node->path, memory_order_acquire);
    if (likely(known))
        return known - 1;
    spin_lock(&registry.lock);
    uint32_t path = atomic_load_explicit(&node->path, memory_order_relaxed);
    if (path) {
        path--;
    } else if (registry.path_count >= PATH_ID_LIMIT) {
        /* The last id is every later path's: its node is the one of the
         * path that first got it. */
        path = PATH_ID_LIMIT - 1;
        atomic_store_explicit(&((struct path_node *)node)->path, path + 1, memory_order_release);
    } else if (registry.path_count == registry.path_capacity &&
               !grow(&registry.path_nodes, &registry.path_capacity, sizeof(*registry.path_nodes))) {
        path = PATH_NONE;
    } else {
        path = registry.path_count;
        __atomic_store_n(&registry.path_count, path + 1, __ATOMIC_RELAXED); /* paths_count reads it unlocked */
        registry.path_nodes[path] = node->id;
        atomic_store_explicit(&((struct path_node *)node)->path, path + 1, memory_order_release);
    }
    spin_unlock(&registry.lock);
    return path;
}

bool paths_hold(bool bounded)
{
    return spin_lock_within(&registry.lock, bounded);
}

void paths_release(void)
{
    spin_unlock(&registry.lock);
}

uint32_t paths_held_node_count(void)
{
    return registry.node_count;
}

const struct path_node *paths_held_node(uint32_t id)
{
    return node_at(id);
}

uint32_t paths_held_node_of_path(uint32_t path)
{
    return path < registry.path_count ? registry.path_nodes[path] : PATH_NONE;
}

void paths_retag(uintptr_t start, uintptr_t end, uintptr_t tag_bits)
{
    spin_lock(&registry.lock);
    /* Nodes and the table are shared read-only with the threads, whose
     * locks the caller holds: nobody probes meanwhile. */
    for (uint32_t id = registry.first_own_node + 1; id < registry.node_count; id++) {
        struct path_node *node = node_at(id);
        if (node->address >= start && node->address < end)
            node->address |= tag_bits;
    }
    struct node_table *table = atomic_load_explicit(&registry.table, memory_order_relaxed);
    if (table) {
        /* Out of memory, none: the next node made places them all again. */
        struct node_table *placed = table_of_nodes(table->bits);
        atomic_store_explicit(&registry.table, placed, memory_order_release);
        region_unmap(table, table_size(table->bits));
    }
    spin_unlock(&registry.lock);
}

uint32_t paths_count(void)
{
    return __atomic_load_n(&registry.path_count, __ATOMIC_RELAXED);
}

uint32_t paths_node_count(void)
{
    return __atomic_load_n(&registry.node_count, __ATOMIC_RELAXED);
}

uint32_t paths_first_own_path(void)
{
    return registry.first_own_path;
}

void paths_fork_prepare(void)
{
    spin_lock(&registry.lock);
}

void paths_fork_parent(void)
{
    spin_unlock(&registry.lock);
}

void paths_fork_child(void)
{
    spin_reset(&registry.lock);
    /* The parent's table stays mapped (copy-on-write) but is forgotten, so
     * the child's blocks get paths of their own and the parent's blocks can
     * be told apart when the child frees them.  The child's paths start
     * from a root of its own. */
    atomic_store_explicit(&registry.table, NULL, memory_order_relaxed);
    registry.first_own_node = registry.node_count;
    registry.first_own_path = registry.path_count;
    add_node(registry.node_count, 0);
}
