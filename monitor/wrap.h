/* What every allocator wrapper does before and after the real call. */
#ifndef MPROF_WRAP_H
#define MPROF_WRAP_H

#include <errno.h>
#include <stdatomic.h>

#include "header.h"
#include "monitor.h"
#include "real.h"
#include "state.h"

/* Everything but ACTIVE: initialise, or serve from the early pool while a
 * thread is resolving the real functions, or just forward when off. */
#define UNLESS_ACTIVE(early_call, real_call)                                       \
    do {                                                                           \
        int status_ = atomic_load_explicit(&monitor_status, memory_order_acquire); \
        if (unlikely(status_ != MONITOR_ACTIVE)) {                                 \
            if (status_ == MONITOR_UNINITIALISED) {                                \
                monitor_init();                                                    \
                status_ = atomic_load(&monitor_status);                            \
            }                                                                      \
            if (status_ == MONITOR_STARTING)                                       \
                return early_call;                                                 \
            if (status_ == MONITOR_OFF)                                            \
                return real_call;                                                  \
        }                                                                          \
    } while (0)

MONITOR_TEXT_INLINE static inline void *early(size_t size, size_t alignment)
{
    void *block = early_alloc(size, alignment);
    if (block)
        atomic_fetch_add(&monitor.early_allocs, 1);
    else
        errno = ENOMEM;
    return block;
}

/* Called with the block the real function returned; headed: with room
 * for a header before it (header.h). */
MONITOR_TEXT_INLINE static inline void *recorded(void *block, size_t size, enum mprof_summary_field field,
                                                 bool headed)
{
    if (likely(block))
        monitor_alloc(block, size, field, headed);
    else
        monitor_count(MPROF_SUM_FAILED_ALLOCS, field);
    return block;
}

/* malloc of size bytes with room for a header before them: the program's
 * block, or NULL as malloc fails. */
MONITOR_TEXT_INLINE static inline void *real_malloc_with_header(size_t size)
{
    if (unlikely(!header_fits(size))) {
        errno = ENOMEM;
        return NULL;
    }
    return header_block(real.malloc(size + BLOCK_HEADER_SIZE));
}

/* realloc of a block with a header to size bytes (not 0); the header moves
 * with the block, unchanged.  NULL as realloc fails, old as it was.  The
 * tag is cleared for the realloc, which may free the old chunk
 * (header_released), and set again on the block that holds the header. */
MONITOR_TEXT_INLINE static inline void *real_realloc_with_header(void *old, size_t size)
{
    if (unlikely(!header_fits(size))) {
        errno = ENOMEM;
        return NULL;
    }
    void *block = header_block(real.realloc(header_released(old), size + BLOCK_HEADER_SIZE));
    header_of(block ? block : old)->tag = BLOCK_HEADER_TAG;
    return block;
}

/* The trace's number for a realloc's release of its old block: taken
 * before the real realloc, which may hand the address to another thread
 * at once; 0 when not tracing. */
static inline uint64_t trace_release_sequence(void)
{
    return unlikely(trace_enabled) ? trace_sequence() : 0;
}

/* realloc, by reallocate, of a block kept in the map (not NULL): taken out
 * first, so that no other thread is handed its address while the map still
 * holds it, and put back if the realloc fails. */
MONITOR_TEXT_INLINE static inline void *realloc_in_map(void *(*reallocate)(void *, size_t), void *old, size_t size)
{
    struct block_info info;
    bool known = monitor_take(old, &info);
    uint64_t sequence = trace_release_sequence();
    void *block = reallocate(old, size);
    if (!block && size != 0) {
        if (known)
            block_map_restore((uintptr_t)old, &info);
        monitor_count(MPROF_SUM_FAILED_ALLOCS, MPROF_SUM_REALLOC_CALLS);
        return NULL;
    }
    monitor_released(old, known, &info, sequence, !block);
    if (block)
        monitor_alloc(block, size, MPROF_SUM_REALLOC_CALLS, false);
    else
        monitor_count(MPROF_SUM_REALLOC_CALLS, MPROF_SUM_REALLOC_CALLS); /* realloc(p, 0) freed p */
    return block;
}

/* The real free of any block the program holds, header or not. */
static inline void real_free_any(void *block)
{
    real.free(block && has_header(block) ? header_released(block) : block);
}

/* free and every delete. */
MONITOR_TEXT_INLINE static inline void release(void *block, enum mprof_summary_field field)
{
    if (unlikely(block && is_early(block))) {
        atomic_fetch_add(&monitor.early_frees, 1);
        return;
    }
    int status = atomic_load_explicit(&monitor_status, memory_order_acquire);
    /* A free can come first (of a block the dynamic loader allocated): the
     * real free must be known before it can be called. */
    if (unlikely(status == MONITOR_UNINITIALISED)) {
        monitor_init();
        status = atomic_load(&monitor_status);
    }
    if (unlikely(status != MONITOR_ACTIVE || monitor_tls.busy)) {
        /* Busy and active: a signal handler interrupted the monitor, which
         * may be half-way through the map; the block waits for it. */
        if (block && status == MONITOR_ACTIVE && monitor_defer_free(block, field))
            return;
        if (block && real.free)
            real_free_any(block);
        return;
    }
    if (likely(block) && has_header(block)) {
        /* Counted before the real free: another thread given the address
         * next must find this block's bytes already gone. */
        monitor_free_headed(block, field);
        real.free(header_released(block));
        return;
    }
    if (likely(block) && !atomic_load_explicit(&monitor.threads_started, memory_order_relaxed)) {
        /* Alone, the block's slot loads while the allocator frees it.  A
         * signal handler's allocation in between must not be recorded:
         * it could be given this very address. */
        block_map_prefetch((uintptr_t)block);
        monitor_tls.busy = 1;
        real.free(block);
        monitor_free(block, field);
        return;
    }
    /* Recorded first, so that no other thread can be given the address
     * while the map still holds it. */
    monitor_free(block, field);
    if (block)
        real.free(block);
}

#endif
