/* The leak record registry (see records.h). */
#include "records.h"

#include <string.h>

#include "arena.h"
#include "lock.h"
#include "ptable.h"

/* The registry; every field is guarded by lock.  Readers on the hot path
 * never come here: each thread keeps its own table of the chains it used. */
static struct {
    spinlock_t lock;
    unsigned leak_depth;
    struct ptable by_chain;
    const struct leak_chain **by_id; /* region, grown by doubling */
    uint32_t capacity;
    uint32_t count;
    uint32_t first_own_id;
} registry = {.lock = SPINLOCK_INIT};

void records_init(unsigned leak_depth)
{
    registry.leak_depth = leak_depth;
}

uint64_t records_hash(const uintptr_t *addrs)
{
    uint64_t hash = 0x243F6A8885A308D3u;
    for (unsigned i = 0; i < registry.leak_depth; i++)
        hash = fold_word(hash, addrs[i]);
    return mix64(hash);
}

bool records_same_chain(const struct leak_chain *chain, const uintptr_t *addrs)
{
    /* A few words: a loop beats a call to memcmp. */
    for (unsigned i = 0; i < registry.leak_depth; i++)
        if (chain->addrs[i] != addrs[i])
            return false;
    return true;
}

static bool same_entry(const void *entry, const void *key)
{
    return records_same_chain(entry, key);
}

MONITOR_TEXT const struct leak_chain *records_intern(const uintptr_t *addrs, uint64_t hash)
{
    spin_lock(&registry.lock);
    struct leak_chain *chain = ptable_find(&registry.by_chain, hash, same_entry, addrs);
    if (chain)
        goto done;
    if (registry.count >= RECORD_ID_LIMIT) {
        chain = (struct leak_chain *)registry.by_id[RECORD_ID_LIMIT - 1];
        goto done;
    }
    /* The last id is the shared record of every chain past the limit; its
     * addresses are all ones, which no return address can be. */
    static const uintptr_t overflow[64] = {[0 ... 63] = UINTPTR_MAX};
    if (registry.count == RECORD_ID_LIMIT - 1)
        addrs = overflow;
    if (registry.count == registry.capacity) {
        uint32_t capacity = registry.capacity ? registry.capacity * 2 : 1024;
        size_t old_size = registry.capacity * sizeof(*registry.by_id);
        size_t new_size = capacity * sizeof(*registry.by_id);
        void *grown = registry.by_id ? region_grow(registry.by_id, old_size, new_size)
                                     : region_map(new_size);
        if (!grown)
            goto done;
        registry.by_id = grown;
        registry.capacity = capacity;
    }
    chain = arena_alloc(sizeof(*chain) + registry.leak_depth * sizeof(uintptr_t));
    if (!chain)
        goto done;
    chain->hash = hash;
    chain->id = registry.count;
    memcpy(chain->addrs, addrs, registry.leak_depth * sizeof(uintptr_t));
    if (!ptable_add(&registry.by_chain, hash, chain)) {
        chain = NULL;
        goto done;
    }
    registry.by_id[registry.count++] = chain;
done:
    spin_unlock(&registry.lock);
    return chain;
}

static uint64_t hash_of_chain(const void *entry)
{
    return ((const struct leak_chain *)entry)->hash;
}

void records_retag(uintptr_t start, uintptr_t end, uintptr_t tag_bits)
{
    spin_lock(&registry.lock);
    for (uint32_t id = registry.first_own_id; id < registry.count; id++) {
        /* Records are shared read-only with the threads, whose locks the
         * caller holds: nobody reads them meanwhile. */
        struct leak_chain *chain = (struct leak_chain *)registry.by_id[id];
        bool changed = false;
        for (unsigned i = 0; i < registry.leak_depth; i++) {
            if (chain->addrs[i] >= start && chain->addrs[i] < end) {
                chain->addrs[i] |= tag_bits;
                changed = true;
            }
        }
        if (changed)
            chain->hash = records_hash(chain->addrs);
    }
    ptable_rehash(&registry.by_chain, hash_of_chain);
    spin_unlock(&registry.lock);
}

const struct leak_chain *records_by_id(uint32_t id)
{
    spin_lock(&registry.lock);
    const struct leak_chain *chain = id < registry.count ? registry.by_id[id] : NULL;
    spin_unlock(&registry.lock);
    return chain;
}

uint32_t records_first_own_id(void)
{
    return registry.first_own_id;
}

void records_fork_prepare(void)
{
    spin_lock(&registry.lock);
}

void records_fork_parent(void)
{
    spin_unlock(&registry.lock);
}

void records_fork_child(void)
{
    spin_reset(&registry.lock);
    /* The parent's table stays mapped (copy-on-write) but is forgotten, so
     * the child's blocks get ids of their own and the parent's blocks can be
     * told apart when the child frees them. */
    registry.by_chain = (struct ptable){0};
    registry.first_own_id = registry.count;
}
