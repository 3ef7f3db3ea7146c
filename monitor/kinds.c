/* The numbering of block kinds of kinds.h. */
#include "kinds.h"

#include <stdatomic.h>

#include "arena.h"
#include "compiler.h"
#include "hash.h"
#include "lock.h"

#define INITIAL_BITS 10
#define OCCUPIED (UINT64_C(1) << 63) /* packed pairs never reach bit 63 */

struct kind_entry {
    _Atomic uint64_t key; /* OCCUPIED | packed pair; 0: empty; set once, after kind */
    uint32_t kind;
};

struct kind_index {
    unsigned bits;
    struct kind_entry entries[];
};

/* kind_chunks, count and the index are written only under writers; the
 * index is read without it.  Replaced indexes are never unmapped, since a
 * reader may still be probing one; together they are smaller than the
 * current one. */
uint64_t *kind_chunks[(KIND_NONE >> KIND_CHUNK_BITS) + 1];
static spinlock_t writers = SPINLOCK_INIT;
static uint32_t count;
static _Atomic(struct kind_index *) current;

static inline uint64_t home(const struct kind_index *index, uint64_t key)
{
    return mix64(key) >> (64 - index->bits);
}

static inline const struct kind_entry *probe(const struct kind_index *index, uint64_t key)
{
    uint64_t mask = (UINT64_C(1) << index->bits) - 1;
    for (uint64_t i = home(index, key);; i = (i + 1) & mask) {
        const struct kind_entry *entry = &index->entries[i];
        uint64_t seen = atomic_load_explicit(&entry->key, memory_order_acquire);
        if (seen == key || !seen)
            return entry;
    }
}

static void put(struct kind_index *index, uint64_t key, uint32_t kind)
{
    struct kind_entry *entry = (struct kind_entry *)probe(index, key);
    entry->kind = kind;
    atomic_store_explicit(&entry->key, key, memory_order_release);
}

/* Called with writers held: the index with room for one more. */
static struct kind_index *roomy_index(void)
{
    struct kind_index *index = atomic_load_explicit(&current, memory_order_relaxed);
    if (index && (uint64_t)(count + 1) * 2 <= (UINT64_C(1) << index->bits))
        return index;
    unsigned bits = index ? index->bits + 1 : INITIAL_BITS;
    struct kind_index *bigger =
        region_map(sizeof(struct kind_index) + (sizeof(struct kind_entry) << bits));
    if (!bigger)
        return NULL;
    bigger->bits = bits;
    for (uint32_t kind = 0; kind < count; kind++)
        put(bigger, OCCUPIED | kind_packed(kind), kind);
    atomic_store_explicit(&current, bigger, memory_order_release);
    return bigger;
}

MONITOR_TEXT static uint32_t add(uint64_t key)
{
    spin_lock(&writers);
    uint32_t kind = KIND_NONE;
    struct kind_index *index = atomic_load_explicit(&current, memory_order_relaxed);
    const struct kind_entry *found = index ? probe(index, key) : NULL;
    if (found && atomic_load_explicit(&found->key, memory_order_relaxed) == key) {
        kind = found->kind; /* another thread made it meanwhile */
    } else if (count < KIND_NONE && (index = roomy_index())) {
        uint64_t **chunk = &kind_chunks[count >> KIND_CHUNK_BITS];
        if (!*chunk)
            *chunk = region_map(sizeof(uint64_t) << KIND_CHUNK_BITS);
        if (*chunk) {
            kind = count++;
            (*chunk)[kind & ((1u << KIND_CHUNK_BITS) - 1)] = key & ~OCCUPIED;
            put(index, key, kind);
        }
    }
    spin_unlock(&writers);
    return kind;
}

MONITOR_TEXT_INLINE uint32_t kinds_find(uint64_t size, uint32_t record)
{
    uint64_t key = OCCUPIED | kind_pack(size, record);
    const struct kind_index *index = atomic_load_explicit(&current, memory_order_acquire);
    if (likely(index)) {
        const struct kind_entry *entry = probe(index, key);
        if (likely(atomic_load_explicit(&entry->key, memory_order_relaxed) == key))
            return entry->kind;
    }
    return add(key);
}

void kinds_fork_prepare(void)
{
    spin_lock(&writers);
}

void kinds_fork_parent(void)
{
    spin_unlock(&writers);
}

void kinds_fork_child(void)
{
    spin_reset(&writers);
}
