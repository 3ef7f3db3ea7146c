/* The pool API of mprof.h (libmprof(3)): the pools the program names, their
 * objects' tables, and the pool frames the objects are counted under. */
#include "pools.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "arena.h"
#include "block_table.h"
#include "compiler.h"
#include "format.h"
#include "hash.h"
#include "header.h"
#include "leak_scan.h"
#include "lock.h"
#include "monitor.h"
#include "mprof.h"
#include "paths.h"

/* Frame ids are 32 bits, less format.h's two frames of mapped memory. */
#define FRAME_ID_LIMIT ((uint32_t)(MPROF_BRK_FRAME - MPROF_POOL_FRAME_BASE))
/* Chunk k of the frames holds FRAME_CHUNK_FIRST << k of them. */
#define FRAME_CHUNK_FIRST_BITS 8
#define FRAME_CHUNK_FIRST (UINT64_C(1) << FRAME_CHUNK_FIRST_BITS)
#define FRAME_CHUNK_COUNT (33 - FRAME_CHUNK_FIRST_BITS)
#define FRAME_NAME_SIZE 56u
/* No frame: out of memory, or of ids. */
#define FRAME_NONE UINT32_MAX

/* A pool frame: what the reports name a pool by.  Pools of one name made
 * by one call share a frame, as an allocator's objects share its call
 * paths: a server's thousand per-request arenas are one line. */
struct pool_frame {
    uintptr_t creator;
    char name[FRAME_NAME_SIZE];
};

/* A pool the program created, by its anchor: the address it passes to
 * every call about the pool. */
struct pool {
    struct block_table objects; /* wide: kind_pack(size, path) of each object */
    uintptr_t anchor;           /* 0 while the pool is on the free list */
    uint32_t frame;             /* FRAME_NONE: its objects are counted untracked */
    unsigned flags; /* mprof.h's MPROF_POOL_ flags */
    /* Whether the anchor was looked at as the pool's backing block, at
     * its first object. */
    bool anchor_checked;
    struct pool *next_free;
};

/* The frames by (name, creator), for frame_of: open addressing, each slot
 * the high half of its frame's hash over the frame's id + 1 (0: empty),
 * never more than half full. */
struct frame_index {
    uint64_t *slots;
    uint64_t mask; /* the slot count - 1 */
    uint64_t used;
};

/* The registry of pools: anchor -> struct pool, the free list of destroyed
 * pools' structures (which are reused, never unmapped), and the frames.
 * Everything is guarded by registry.anchors.lock, but the frames: a
 * frame's fields are written, and its chunk published, before frame_count
 * grows past it, so the writer reads them without the lock, as chunks that
 * never move. */
static struct {
    struct block_table anchors; /* wide: the pool's address as the value */
    struct pool *free_pools;
    atomic_uint frame_count;
    struct pool_frame *frame_chunks[FRAME_CHUNK_COUNT];
    struct frame_index frame_index;
    struct pool *malloc_like; /* the pool of blocks announced with no pool, made at the first */
} registry;

/* Every change of the registry bumps it: a thread's cached pool is only
 * used while it has not changed. */
static atomic_uint_least64_t registry_generation = 1;

/* Each thread's last pool, found again without the registry's lock; owned
 * by the thread. */
struct pool_cache {
    uint64_t generation;
    uintptr_t hidden_anchor; /* leak_hidden(anchor): a pool's first object may lie there */
    struct pool *pool;
};
static __thread struct pool_cache pool_cache __attribute__((tls_model("initial-exec")));

static inline unsigned frame_chunk(uint32_t id, uint64_t *offset)
{
    uint64_t n = (uint64_t)id + FRAME_CHUNK_FIRST;
    unsigned k = (unsigned)(63 - __builtin_clzll(n)) - FRAME_CHUNK_FIRST_BITS;
    *offset = n - (FRAME_CHUNK_FIRST << k);
    return k;
}

static struct pool_frame *frame_at(uint32_t id)
{
    uint64_t offset;
    unsigned k = frame_chunk(id, &offset);
    return registry.frame_chunks[k] + offset;
}

uint32_t pools_frame_count(void)
{
    return atomic_load_explicit(&registry.frame_count, memory_order_acquire);
}

void pools_frame(uint32_t id, uintptr_t *creator, const char **name)
{
    const struct pool_frame *frame = frame_at(id);
    *creator = frame->creator;
    *name = frame->name;
}

/* The hash of a frame: its name as kept (NUL-padded words) and creator. */
static uint64_t frame_hash(const char name[FRAME_NAME_SIZE], uintptr_t creator)
{
    uint64_t running = creator;
    for (unsigned i = 0; i < FRAME_NAME_SIZE; i += sizeof(uint64_t)) {
        uint64_t word;
        memcpy(&word, name + i, sizeof word);
        running = fold_word(running, word);
    }
    return mix64(running);
}

/* Puts id, of hash, into an index with room for it. */
static void index_place(struct frame_index *index, uint64_t hash, uint32_t id)
{
    uint64_t at = hash & index->mask;
    while (index->slots[at])
        at = (at + 1) & index->mask;
    index->slots[at] = (hash & ~UINT64_C(0xffffffff)) | ((uint64_t)id + 1);
    index->used++;
}

/* Makes room in the index for one more frame, doubling it when half full;
 * false when out of memory. */
static bool index_room(struct frame_index *index)
{
    uint64_t slots = index->slots ? index->mask + 1 : 0;
    if (2 * (index->used + 1) <= slots)
        return true;
    uint64_t grown_slots = slots ? 2 * slots : 1024;
    struct frame_index grown = {region_map(grown_slots * sizeof(uint64_t)), grown_slots - 1, 0};
    if (!grown.slots)
        return false;
    for (uint64_t i = 0; i < slots; i++) {
        if (!index->slots[i])
            continue;
        uint32_t id = (uint32_t)(index->slots[i] & 0xffffffff) - 1;
        const struct pool_frame *frame = frame_at(id);
        index_place(&grown, frame_hash(frame->name, frame->creator), id);
    }
    if (index->slots)
        region_unmap(index->slots, slots * sizeof(uint64_t));
    *index = grown;
    return true;
}

/* The frame of (name, creator), made on first use, found in constant
 * expected time; the registry's lock held.  FRAME_NONE when out of memory
 * or ids. */
static uint32_t frame_of(const char *name, uintptr_t creator)
{
    char kept[FRAME_NAME_SIZE] = {0};
    if (name)
        strncpy(kept, name, FRAME_NAME_SIZE - 1);
    uint64_t hash = frame_hash(kept, creator);
    struct frame_index *index = &registry.frame_index;
    for (uint64_t at = hash & index->mask; index->slots && index->slots[at]; at = (at + 1) & index->mask) {
        uint64_t slot = index->slots[at];
        if ((slot ^ hash) >> 32)
            continue;
        uint32_t id = (uint32_t)(slot & 0xffffffff) - 1;
        const struct pool_frame *frame = frame_at(id);
        if (frame->creator == creator && memcmp(frame->name, kept, FRAME_NAME_SIZE) == 0)
            return id;
    }
    uint32_t count = atomic_load_explicit(&registry.frame_count, memory_order_relaxed);
    if (count == FRAME_ID_LIMIT || !index_room(index))
        return FRAME_NONE;
    uint64_t offset;
    unsigned k = frame_chunk(count, &offset);
    struct pool_frame **chunk = &registry.frame_chunks[k];
    if (!*chunk && !(*chunk = region_map(sizeof(struct pool_frame) * (FRAME_CHUNK_FIRST << k))))
        return FRAME_NONE;
    struct pool_frame *frame = frame_at(count);
    frame->creator = creator;
    memcpy(frame->name, kept, FRAME_NAME_SIZE);
    index_place(index, hash, count);
    atomic_store_explicit(&registry.frame_count, count + 1, memory_order_release);
    return count;
}

static inline uint64_t anchor_hash(uintptr_t anchor)
{
    return block_table_hash(anchor);
}

/* The pool at anchor, or NULL; the registry's lock held. */
static struct pool *registered(uintptr_t anchor)
{
    struct block_entry entry;
    if (!block_table_find(&registry.anchors, anchor_hash(anchor), anchor, true, &entry))
        return NULL;
    return (struct pool *)(uintptr_t)entry.value;
}

/* A new pool at anchor, of frame; the registry's lock held.  NULL when out
 * of memory. */
static struct pool *register_pool(uintptr_t anchor, uint32_t frame, unsigned flags)
{
    struct pool *pool = registry.free_pools;
    if (pool)
        registry.free_pools = pool->next_free;
    else if (!(pool = arena_alloc(sizeof(*pool))))
        return NULL;
    bool replaced = false;
    if (!block_table_insert(&registry.anchors, anchor_hash(anchor), (struct block_entry){anchor, (uintptr_t)pool},
                            true, &replaced)) {
        pool->next_free = registry.free_pools;
        registry.free_pools = pool;
        return NULL;
    }
    /* A pool of backing holds no objects of its own to check its anchor
     * against. */
    *pool = (struct pool){.objects = {.lock = SPINLOCK_INIT}, .anchor = anchor, .frame = frame, .flags = flags,
                          .anchor_checked = flags & MPROF_POOL_OF_BACKING};
    atomic_fetch_add_explicit(&registry_generation, 1, memory_order_release);
    return pool;
}

/* The pool at anchor; made, of a frame of no name made by creator, when
 * the program announces an object of a pool it never created.  NULL when
 * out of memory. */
static struct pool *pool_at(uintptr_t anchor, uintptr_t creator)
{
    struct pool_cache *cache = &pool_cache;
    uint64_t generation = atomic_load_explicit(&registry_generation, memory_order_acquire);
    if (likely(cache->hidden_anchor == leak_hidden(anchor) && cache->generation == generation))
        return cache->pool;
    spin_lock(&registry.anchors.lock);
    struct pool *pool = registered(anchor);
    if (!pool)
        pool = register_pool(anchor, frame_of(NULL, creator), 0);
    generation = atomic_load_explicit(&registry_generation, memory_order_relaxed);
    spin_unlock(&registry.anchors.lock);
    if (pool)
        *cache = (struct pool_cache){generation, leak_hidden(anchor), pool};
    return pool;
}

/* Takes the pool at anchor out of the registry, onto the free list, and
 * hands back its objects' table (empty when there is none). */
static struct block_table unregister_pool(uintptr_t anchor)
{
    struct block_table objects = {0};
    spin_lock(&registry.anchors.lock);
    struct block_entry entry;
    if (block_table_take(&registry.anchors, anchor_hash(anchor), anchor, true, &entry)) {
        struct pool *pool = (struct pool *)(uintptr_t)entry.value;
        spin_lock(&pool->objects.lock);
        objects = pool->objects;
        spin_unlock(&pool->objects.lock);
        pool->anchor = 0;
        pool->next_free = registry.free_pools;
        registry.free_pools = pool;
        atomic_fetch_add_explicit(&registry_generation, 1, memory_order_release);
    }
    spin_unlock(&registry.anchors.lock);
    return objects;
}

/* Whether a call of the API may be recorded now: the monitor is active and
 * not busy on this thread (a signal handler interrupted it, or the call
 * came from its own libraries). */
static bool recording(void)
{
    int status = atomic_load_explicit(&monitor_status, memory_order_acquire);
    if (unlikely(status == MONITOR_UNINITIALISED)) {
        monitor_init();
        status = atomic_load(&monitor_status);
    }
    return status == MONITOR_ACTIVE && !monitor_tls.busy;
}

/* The pool's table, taken out of it, which is left empty; its lock held. */
static struct block_table detached(struct pool *pool)
{
    struct block_table objects = pool->objects;
    pool->objects.words = NULL;
    pool->objects.slots = pool->objects.used = 0;
    return objects;
}

/* Frees every object of a table taken out of a pool.  The table goes back
 * to pool, emptied, when the pool has made none since and the table is not
 * eight times larger than its objects needed: an arena reset a thousand
 * times a second would otherwise map and unmap its table as often.  Else
 * (pool NULL: destroyed) its memory is unmapped. */
static void free_all(struct pool *pool, struct block_table *objects)
{
    if (!objects->words)
        return;
    monitor_pool_free_all(objects->words, objects->slots);
    size_t bytes = block_table_bytes(objects->slots, true);
    if (pool && objects->used * 8 >= objects->slots) {
        memset(objects->words, 0, bytes);
        spin_lock(&pool->objects.lock);
        if (!pool->objects.words) {
            pool->objects.words = objects->words;
            pool->objects.slots = objects->slots;
            objects->words = NULL;
        }
        spin_unlock(&pool->objects.lock);
    }
    if (objects->words)
        region_unmap(objects->words, bytes);
}

/* What precedes block, where a header would be: read with
 * process_vm_readv, which fails instead of faulting where nothing is
 * mapped (the start of a region the program mapped itself).  NULL when it
 * cannot be read. */
static const struct block_header *header_before(const void *block, struct block_header *header)
{
    struct iovec local = {header, sizeof *header};
    struct iovec remote = {header_of((void *)block), sizeof *header};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof *header ? header : NULL;
}

/* The anchor of a pool of objects carved from a block it heads (memcheck's
 * rule: a malloc'ed block that holds a pool's objects is not leaked, they
 * are) becomes backing at its first object.  The anchor may be any
 * address. */
static void check_anchor(struct pool *pool, const void *object, size_t size)
{
    pool->anchor_checked = true;
    void *anchor = (void *)pool->anchor;
    if ((uintptr_t)anchor % 16 || (uintptr_t)object < (uintptr_t)anchor)
        return;
    struct block_header header;
    const struct block_header *before = header_before(anchor, &header);
    if (monitor_block_holds(anchor, before, object, size))
        monitor_make_backing(anchor, before);
}

static void create(const void *anchor, const char *name, unsigned flags, uintptr_t creator)
{
    if (!recording() || !anchor)
        return;
    struct block_table orphans = unregister_pool((uintptr_t)anchor); /* a pool never destroyed */
    spin_lock(&registry.anchors.lock);
    register_pool((uintptr_t)anchor, frame_of(name, creator), flags);
    spin_unlock(&registry.anchors.lock);
    free_all(NULL, &orphans);
}

EXPORT MONITOR_TEXT void mprof_pool_create(const void *anchor, const char *name)
{
    create(anchor, name, 0, (uintptr_t)__builtin_return_address(0));
}

EXPORT MONITOR_TEXT void mprof_pool_create_ext(const void *anchor, const char *name, unsigned flags)
{
    create(anchor, name, flags & (MPROF_POOL_OF_BACKING | MPROF_POOL_AUTO_FREE),
           (uintptr_t)__builtin_return_address(0));
}

EXPORT MONITOR_TEXT void mprof_pool_destroy(const void *anchor)
{
    if (!recording() || !anchor)
        return;
    struct block_table objects = unregister_pool((uintptr_t)anchor);
    free_all(NULL, &objects);
}

EXPORT MONITOR_TEXT void mprof_pool_reset(const void *anchor)
{
    if (!recording() || !anchor)
        return;
    struct pool *pool = pool_at((uintptr_t)anchor, (uintptr_t)__builtin_return_address(0));
    if (!pool)
        return;
    spin_lock(&pool->objects.lock);
    struct block_table objects = detached(pool);
    spin_unlock(&pool->objects.lock);
    free_all(pool, &objects);
}

/* The pool of anchor, or of the blocks announced with none. */
static struct pool *pool_of(const void *anchor, uintptr_t creator)
{
    if (anchor)
        return pool_at((uintptr_t)anchor, creator);
    struct pool *pool = __atomic_load_n(&registry.malloc_like, __ATOMIC_ACQUIRE);
    if (likely(pool))
        return pool;
    spin_lock(&registry.anchors.lock);
    pool = registry.malloc_like;
    if (!pool && (pool = arena_alloc(sizeof(*pool)))) {
        *pool = (struct pool){.objects = {.lock = SPINLOCK_INIT}, .frame = frame_of(NULL, 0), .anchor_checked = true};
        __atomic_store_n(&registry.malloc_like, pool, __ATOMIC_RELEASE);
    }
    spin_unlock(&registry.anchors.lock);
    return pool;
}

/* An object of the pool: counted, or a piece of backing of a pool of
 * backing. */
MONITOR_TEXT static void announce(struct pool *pool, const void *object, size_t size)
{
    if (unlikely(pool->flags & MPROF_POOL_OF_BACKING))
        monitor_pool_backing(&pool->objects, object, size);
    else if (unlikely(pool->frame == FRAME_NONE))
        monitor_count_untracked();
    else
        monitor_pool_alloc(&pool->objects, pool->frame, object, size);
}

EXPORT MONITOR_TEXT void mprof_pool_alloc(const void *anchor, const void *object, size_t size)
{
    if (!recording() || !object)
        return;
    struct pool *pool = pool_of(anchor, (uintptr_t)__builtin_return_address(0));
    if (!pool) {
        monitor_count_untracked();
        return;
    }
    if (unlikely(!pool->anchor_checked))
        check_anchor(pool, object, size);
    announce(pool, object, size);
}

/* Frees the objects of pool inside [low, high) (inside), or wholly outside
 * it. */
static void free_objects(struct pool *pool, uintptr_t low, uintptr_t high, bool inside)
{
    spin_lock(&pool->objects.lock);
    struct block_table all = detached(pool);
    struct block_table gone = {0};
    bool complete = true;
    for (uint64_t i = 0; all.words && i < all.slots; i++) {
        struct block_entry entry = block_table_entry_at(all.words, i, true);
        if (!entry.pointer)
            continue;
        uint64_t end = entry.pointer + kind_size(entry.value);
        bool kept = inside ? entry.pointer < low || end > high : end > low && entry.pointer < high;
        bool replaced = false;
        struct block_table *into = kept ? &pool->objects : &gone;
        complete &= block_table_insert(into, block_table_hash(entry.pointer), entry, true, &replaced);
    }
    spin_unlock(&pool->objects.lock);
    if (!complete)
        monitor_count_untracked();
    if (all.words)
        region_unmap(all.words, block_table_bytes(all.slots, true));
    free_all(NULL, &gone);
}

/* The size of a pool's object, or 0 when it holds none at object. */
static uint64_t object_size(struct pool *pool, const void *object)
{
    uintptr_t pointer = (uintptr_t)object;
    struct block_entry entry = {0};
    spin_lock(&pool->objects.lock);
    block_table_find(&pool->objects, block_table_hash(pointer), pointer, true, &entry);
    spin_unlock(&pool->objects.lock);
    return kind_size(entry.value);
}

EXPORT MONITOR_TEXT void mprof_pool_free(const void *anchor, const void *object)
{
    if (!recording() || !object)
        return;
    struct pool *pool = pool_of(anchor, (uintptr_t)__builtin_return_address(0));
    if (!pool)
        return;
    if (unlikely(pool->flags & MPROF_POOL_AUTO_FREE)) {
        uint64_t size = object_size(pool, object);
        struct pool *malloc_like = pool_of(NULL, 0);
        if (size && malloc_like)
            free_objects(malloc_like, (uintptr_t)object, (uintptr_t)object + size, true);
    }
    monitor_pool_free(&pool->objects, object);
}

/* Whether the pool holds an object at object. */
static bool holds(struct pool *pool, const void *object)
{
    uintptr_t pointer = (uintptr_t)object;
    struct block_entry entry;
    spin_lock(&pool->objects.lock);
    bool held = block_table_find(&pool->objects, block_table_hash(pointer), pointer, true, &entry);
    spin_unlock(&pool->objects.lock);
    return held;
}

/* A resize in place of what is no malloc-like block: memcheck resizes a
 * block of the malloc family as well, and refuses anything else as an
 * invalid free, which mprof counts an unknown one.  object may be any
 * address. */
MONITOR_TEXT static void resize_block(struct pool *malloc_like, const void *object, size_t size)
{
    struct block_header header;
    const struct block_header *before = monitor.block_headers ? header_before(object, &header) : NULL;
    if (!monitor_resize_block((void *)object, before, size))
        monitor_pool_free(&malloc_like->objects, object);
}

EXPORT MONITOR_TEXT void mprof_pool_realloc(const void *anchor, const void *old, const void *object, size_t size)
{
    if (!recording())
        return;
    struct pool *pool = pool_of(anchor, (uintptr_t)__builtin_return_address(0));
    if (!pool)
        return;
    if (!anchor && old && old == object && !holds(pool, old)) {
        resize_block(pool, old, size);
        return;
    }
    if (old)
        monitor_pool_free(&pool->objects, old);
    if (object)
        announce(pool, object, size);
}

/* The objects wholly outside [start, start + size) go, as memcheck's
 * MEMPOOL_TRIM has it. */
EXPORT MONITOR_TEXT void mprof_pool_trim(const void *anchor, const void *start, size_t size)
{
    if (!recording() || !anchor)
        return;
    struct pool *pool = pool_at((uintptr_t)anchor, (uintptr_t)__builtin_return_address(0));
    if (pool)
        free_objects(pool, (uintptr_t)start, (uintptr_t)start + size, false);
}

EXPORT MONITOR_TEXT void mprof_pool_move(const void *from, const void *to)
{
    if (!recording() || !from || !to || from == to)
        return;
    spin_lock(&registry.anchors.lock);
    struct block_entry entry;
    if (block_table_take(&registry.anchors, anchor_hash((uintptr_t)from), (uintptr_t)from, true, &entry)) {
        struct pool *pool = (struct pool *)(uintptr_t)entry.value;
        bool replaced = false;
        pool->anchor = (uintptr_t)to;
        block_table_insert(&registry.anchors, anchor_hash((uintptr_t)to), (struct block_entry){(uintptr_t)to,
                           entry.value}, true, &replaced);
        atomic_fetch_add_explicit(&registry_generation, 1, memory_order_release);
    }
    spin_unlock(&registry.anchors.lock);
}

EXPORT MONITOR_TEXT void mprof_backing_begin(void)
{
    monitor_tls.backing += 2;
}

EXPORT MONITOR_TEXT void mprof_backing_end(void)
{
    if (monitor_tls.backing >= 2)
        monitor_tls.backing -= 2;
}

EXPORT MONITOR_TEXT void mprof_backing_block(const void *block)
{
    struct block_header header;
    if (recording() && block)
        monitor_make_backing((void *)block, header_before(block, &header));
}

/* Applies action to the lock of every pool's table; the registry's lock
 * held. */
static void each_pool_lock(void (*action)(spinlock_t *))
{
    for (uint64_t i = 0; registry.anchors.words && i < registry.anchors.slots; i++) {
        struct block_entry entry = block_table_entry_at(registry.anchors.words, i, true);
        if (entry.pointer)
            action(&((struct pool *)(uintptr_t)entry.value)->objects.lock);
    }
    if (registry.malloc_like)
        action(&registry.malloc_like->objects.lock);
}

static void visit_objects(struct pool *pool, bool locking, block_visitor *visit, void *context)
{
    struct block_table *objects = &pool->objects;
    if (locking)
        spin_lock(&objects->lock);
    for (uint64_t i = 0; objects->words && i < objects->slots; i++) {
        struct block_entry entry = block_table_entry_at(objects->words, i, true);
        if (entry.pointer)
            visit(context, entry.pointer, kind_size(entry.value), kind_record(entry.value));
    }
    if (locking)
        spin_unlock(&objects->lock);
}

void pools_each_object(bool locking, block_visitor *visit, void *context)
{
    if (locking)
        spin_lock(&registry.anchors.lock);
    for (uint64_t i = 0; registry.anchors.words && i < registry.anchors.slots; i++) {
        struct block_entry entry = block_table_entry_at(registry.anchors.words, i, true);
        if (entry.pointer)
            visit_objects((struct pool *)(uintptr_t)entry.value, locking, visit, context);
    }
    if (registry.malloc_like)
        visit_objects(registry.malloc_like, locking, visit, context);
    if (locking)
        spin_unlock(&registry.anchors.lock);
}

void pools_fork_prepare(void)
{
    spin_lock(&registry.anchors.lock);
    each_pool_lock(spin_lock);
}

void pools_fork_parent(void)
{
    each_pool_lock(spin_unlock);
    spin_unlock(&registry.anchors.lock);
}

void pools_fork_child(void)
{
    each_pool_lock(spin_reset);
    spin_reset(&registry.anchors.lock);
    pool_cache = (struct pool_cache){0};
}
