/* C++ operator new and delete in all their variants, defined by their
 * mangled names so that the monitor stays C and links no C++ runtime.
 * new follows [new.delete.single]: on failure it calls the new-handler and
 * tries again, and throws std::bad_alloc (raised by libstdc++) when there is
 * none.  The frames here carry unwind tables, so the exception passes. */
#include <dlfcn.h>
#include <stdlib.h>

#include "wrap.h"

typedef void (*new_handler_t)(void);

/* libstdc++ may arrive after the monitor started, through dlopen. */
static void resolve_cxx_runtime(void)
{
    if (real.get_new_handler && real.throw_bad_alloc)
        return;
    monitor_tls.busy++;
    real.get_new_handler = (new_handler_t(*)(void))dlsym(RTLD_DEFAULT, "_ZSt15get_new_handlerv");
    real.throw_bad_alloc = (__typeof__(real.throw_bad_alloc))dlsym(RTLD_DEFAULT, "_ZSt17__throw_bad_allocv");
    monitor_tls.busy--;
}

static inline void *real_block(size_t size, size_t alignment)
{
    if (size == 0)
        size = 1; /* new must return a distinct pointer even for 0 bytes */
    return alignment > 16 ? real.memalign(alignment, size) : real.malloc(size);
}

/* One attempt; NULL on failure. */
MONITOR_TEXT static void *new_attempt(size_t size, size_t alignment, enum mprof_summary_field field)
{
    UNLESS_ACTIVE(early(size ? size : 1, alignment), real_block(size, alignment));
    if (unlikely(monitor_tls.busy)) {
        monitor_count_untracked();
        return real_block(size, alignment);
    }
    if (likely(monitor.block_headers && alignment <= 16))
        return recorded(real_malloc_with_header(size), size, field, true);
    monitor_tls.trace_alignment = alignment > 16 ? alignment : 0;
    return recorded(real_block(size, alignment), size, field, false);
}

MONITOR_TEXT static void *new_throwing(size_t size, size_t alignment, enum mprof_summary_field field)
{
    for (;;) {
        void *block = new_attempt(size, alignment, field);
        if (likely(block))
            return block;
        resolve_cxx_runtime();
        new_handler_t handler = real.get_new_handler ? real.get_new_handler() : NULL;
        if (!handler) {
            if (real.throw_bad_alloc)
                real.throw_bad_alloc();
            abort();
        }
        handler();
    }
}

/* A new-handler may throw, which nothrow new must catch: only libstdc++'s
 * own nothrow new can, so after a failure the call goes there, with the
 * monitor's guard up so that its malloc is not counted twice. */
MONITOR_TEXT static void *new_nothrow(size_t size, size_t alignment,
                                      enum mprof_summary_field field,
                                      void *(*libstdcxx_new)(size_t, const void *),
                                      void *(*libstdcxx_aligned_new)(size_t, size_t, const void *),
                                      const void *nothrow)
{
    void *block = new_attempt(size, alignment, field);
    if (likely(block))
        return block;
    resolve_cxx_runtime();
    if (!real.get_new_handler || !real.get_new_handler())
        return NULL;
    monitor_tls.busy++;
    block = alignment > 16 ? (libstdcxx_aligned_new ? libstdcxx_aligned_new(size, alignment, nothrow) : NULL)
                           : (libstdcxx_new ? libstdcxx_new(size, nothrow) : NULL);
    monitor_tls.busy--;
    if (block)
        monitor_alloc(block, size, field, false);
    return block;
}

MONITOR_TEXT static void delete_block(void *block)
{
    release(block, MPROF_SUM_DELETE_CALLS);
}

#define NEW MPROF_SUM_NEW_CALLS

EXPORT MONITOR_TEXT void *_Znwm(size_t size) { return new_throwing(size, 0, NEW); }
EXPORT MONITOR_TEXT void *_Znam(size_t size) { return new_throwing(size, 0, NEW); }
EXPORT MONITOR_TEXT void *_ZnwmSt11align_val_t(size_t size, size_t alignment)
{
    return new_throwing(size, alignment, NEW);
}
EXPORT MONITOR_TEXT void *_ZnamSt11align_val_t(size_t size, size_t alignment)
{
    return new_throwing(size, alignment, NEW);
}
EXPORT MONITOR_TEXT void *_ZnwmRKSt9nothrow_t(size_t size, const void *nothrow)
{
    return new_nothrow(size, 0, NEW, real.new_nothrow, NULL, nothrow);
}
EXPORT MONITOR_TEXT void *_ZnamRKSt9nothrow_t(size_t size, const void *nothrow)
{
    return new_nothrow(size, 0, NEW, real.new_array_nothrow, NULL, nothrow);
}
EXPORT MONITOR_TEXT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t alignment,
                                                              const void *nothrow)
{
    return new_nothrow(size, alignment, NEW, NULL, real.new_aligned_nothrow, nothrow);
}
EXPORT MONITOR_TEXT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t alignment,
                                                              const void *nothrow)
{
    return new_nothrow(size, alignment, NEW, NULL, real.new_array_aligned_nothrow, nothrow);
}

/* Every delete: the size, alignment and nothrow arguments change nothing
 * for a block that came from malloc or memalign. */
EXPORT MONITOR_TEXT void _ZdlPv(void *block) { delete_block(block); }
EXPORT MONITOR_TEXT void _ZdaPv(void *block) { delete_block(block); }
EXPORT MONITOR_TEXT void _ZdlPvm(void *block, size_t size) { (void)size; delete_block(block); }
EXPORT MONITOR_TEXT void _ZdaPvm(void *block, size_t size) { (void)size; delete_block(block); }
EXPORT MONITOR_TEXT void _ZdlPvRKSt9nothrow_t(void *block, const void *nothrow)
{
    (void)nothrow;
    delete_block(block);
}
EXPORT MONITOR_TEXT void _ZdaPvRKSt9nothrow_t(void *block, const void *nothrow)
{
    (void)nothrow;
    delete_block(block);
}
EXPORT MONITOR_TEXT void _ZdlPvSt11align_val_t(void *block, size_t alignment)
{
    (void)alignment;
    delete_block(block);
}
EXPORT MONITOR_TEXT void _ZdaPvSt11align_val_t(void *block, size_t alignment)
{
    (void)alignment;
    delete_block(block);
}
EXPORT MONITOR_TEXT void _ZdlPvmSt11align_val_t(void *block, size_t size, size_t alignment)
{
    (void)size, (void)alignment;
    delete_block(block);
}
EXPORT MONITOR_TEXT void _ZdaPvmSt11align_val_t(void *block, size_t size, size_t alignment)
{
    (void)size, (void)alignment;
    delete_block(block);
}
EXPORT MONITOR_TEXT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *block, size_t alignment,
                                                             const void *nothrow)
{
    (void)alignment, (void)nothrow;
    delete_block(block);
}
EXPORT MONITOR_TEXT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *block, size_t alignment,
                                                             const void *nothrow)
{
    (void)alignment, (void)nothrow;
    delete_block(block);
}
