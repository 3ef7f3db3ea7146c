/* The call path tree's registry (see paths.h). */
#include "paths.h"

#include "arena.h"
#include "lock.h"
#include "entry_table.h"

/* Every field is guarded by lock.  The hot path comes here only for a node
 * or a path its thread has not used lately. */
static struct {
    spinlock_t lock;
    struct entry_table by_key;          /* nodes by (parent, address) */
    struct path_node **nodes;      /* by id; region, grown by doubling */
    uint32_t node_capacity, node_count;
    uint32_t *path_nodes;          /* the node of each path id */
    uint32_t path_capacity, path_count;
    uint32_t first_own_node, first_own_path;
} registry = {.lock = SPINLOCK_INIT};

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

/* Called with the lock held. */
static struct path_node *add_node(uint32_t parent, uintptr_t address, uint64_t hash)
{
    if (registry.node_count == registry.node_capacity &&
        !grow(&registry.nodes, &registry.node_capacity, sizeof(*registry.nodes)))
        return NULL;
    struct path_node *node = arena_alloc(sizeof(*node));
    if (!node)
        return NULL;
    node->hash = hash;
    node->address = address;
    node->parent = parent;
    node->id = registry.node_count;
    atomic_init(&node->path, 0);
    registry.nodes[registry.node_count++] = node;
    return node;
}

void paths_init(void)
{
    spin_lock(&registry.lock);
    if (!registry.node_count)
        add_node(0, 0, 0); /* the root: no address, never in by_key */
    spin_unlock(&registry.lock);
}

uint32_t paths_root(void)
{
    return registry.first_own_node;
}

uint64_t paths_hash(uint32_t parent, uintptr_t address)
{
    return mix64(fold_word(fold_word(0x243F6A8885A308D3u, parent), address));
}

struct node_key {
    uint32_t parent;
    uintptr_t address;
};

static bool same_node(const void *entry, const void *key)
{
    const struct path_node *node = entry;
    const struct node_key *wanted = key;
    return node->parent == wanted->parent && node->address == wanted->address;
}

MONITOR_TEXT const struct path_node *paths_node(uint32_t parent, uintptr_t address, uint64_t hash)
{
    struct node_key key = {parent, address};
    spin_lock(&registry.lock);
    struct path_node *node = entry_table_find(&registry.by_key, hash, same_node, &key);
    if (!node && (node = add_node(parent, address, hash)) && !entry_table_add(&registry.by_key, hash, node)) {
        registry.node_count--; /* forgotten: its arena bytes stay unused */
        node = NULL;
    }
    spin_unlock(&registry.lock);
    return node;
}

MONITOR_TEXT uint32_t paths_path_of(const struct path_node *node)
{
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
        path = registry.path_count++;
        registry.path_nodes[path] = node->id;
        atomic_store_explicit(&((struct path_node *)node)->path, path + 1, memory_order_release);
    }
    spin_unlock(&registry.lock);
    return path;
}

const struct path_node *paths_node_by_id(uint32_t id)
{
    spin_lock(&registry.lock);
    const struct path_node *node = id < registry.node_count ? registry.nodes[id] : NULL;
    spin_unlock(&registry.lock);
    return node;
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
    return registry.nodes[id];
}

uint32_t paths_held_node_of_path(uint32_t path)
{
    return path < registry.path_count ? registry.path_nodes[path] : PATH_NONE;
}

static uint64_t hash_of_node(const void *entry)
{
    return ((const struct path_node *)entry)->hash;
}

void paths_retag(uintptr_t start, uintptr_t end, uintptr_t tag_bits)
{
    spin_lock(&registry.lock);
    /* Nodes are shared read-only with the threads, whose locks the caller
     * holds: nobody reads them meanwhile. */
    for (uint32_t id = registry.first_own_node; id < registry.node_count; id++) {
        struct path_node *node = registry.nodes[id];
        if (id != registry.first_own_node && node->address >= start && node->address < end) {
            node->address |= tag_bits;
            node->hash = paths_hash(node->parent, node->address);
        }
    }
    entry_table_rehash(&registry.by_key, hash_of_node);
    spin_unlock(&registry.lock);
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
    registry.by_key = (struct entry_table){0};
    registry.first_own_node = registry.node_count;
    registry.first_own_path = registry.path_count;
    add_node(registry.node_count, 0, 0);
}
