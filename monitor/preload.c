/* The interposed C allocator, exec, _exit and dlclose.  Only wrappers here: each
 * makes sure the monitor is ready, calls the real function, records. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exec_arguments.h"
#include "leak_scan.h"
#include "monitor.h"
#include "real.h"
#include "state.h"
#include "trace.h"
#include "wrap.h"

EXPORT MONITOR_TEXT void *malloc(size_t size)
{
    UNLESS_ACTIVE(early(size, 16), real.malloc(size));
    if (unlikely(monitor_tls.busy)) {
        monitor_count_untracked();
        return real.malloc(size);
    }
    if (likely(monitor.block_headers))
        return recorded(real_malloc_with_header(size), size, MPROF_SUM_MALLOC_CALLS, true);
    return recorded(real.malloc(size), size, MPROF_SUM_MALLOC_CALLS, false);
}

EXPORT MONITOR_TEXT void *calloc(size_t count, size_t size)
{
    size_t total;
    /* The early pool must refuse what calloc refuses; it is zeroed bss. */
    UNLESS_ACTIVE(__builtin_mul_overflow(count, size, &total) ? (errno = ENOMEM, NULL)
                                                              : early(total, 16),
                  real.calloc(count, size));
    if (unlikely(monitor_tls.busy)) {
        monitor_count_untracked();
        return real.calloc(count, size);
    }
    if (likely(monitor.block_headers)) {
        void *block = NULL;
        if (__builtin_mul_overflow(count, size, &total) || !header_fits(total))
            errno = ENOMEM;
        else
            block = header_block(real.calloc(total + BLOCK_HEADER_SIZE, 1));
        return recorded(block, block ? total : 0, MPROF_SUM_CALLOC_CALLS, true);
    }
    void *block = real.calloc(count, size);
    return recorded(block, block ? count * size : 0, MPROF_SUM_CALLOC_CALLS, false);
}

EXPORT MONITOR_TEXT void free(void *block)
{
    release(block, MPROF_SUM_FREE_CALLS);
}

/* realloc of a block from the early pool: move it to the real heap, or to
 * another early block while the real allocator is still being looked up. */
MONITOR_TEXT static void *realloc_early(void *old, size_t size)
{
    atomic_fetch_add(&monitor.early_frees, 1);
    if (size == 0)
        return NULL;
    void *block = atomic_load(&monitor_status) == MONITOR_STARTING ? early(size, 16) : malloc(size);
    if (block) {
        size_t old_size = early_size(old);
        memcpy(block, old, old_size < size ? old_size : size);
    }
    return block;
}

/* While the real allocator is being looked up only early blocks can have
 * been handed out; anything else cannot be reallocated yet. */
MONITOR_TEXT static void *realloc_while_starting(void *old, size_t size)
{
    if (is_early(old))
        return realloc_early(old, size);
    errno = ENOMEM;
    return NULL;
}

/* realloc without recording (the monitor is off, or busy on this thread):
 * a block with a header keeps it, and the figures it holds, which its free
 * will count. */
MONITOR_TEXT static void *realloc_unrecorded(void *old, size_t size)
{
    if (!old || !has_header(old))
        return real.realloc(old, size);
    if (size == 0) {
        real.free(header_released(old)); /* as glibc's realloc(p, 0) */
        return NULL;
    }
    return real_realloc_with_header(old, size);
}

/* What malloc_usable_size says of any block the program holds. */
static size_t usable_size(void *block)
{
    if (block && has_header(block))
        return real.malloc_usable_size(header_base(block)) - BLOCK_HEADER_SIZE;
    return real.malloc_usable_size(block);
}

/* realloc in a signal handler that interrupted the monitor: the old block
 * cannot leave the map now, so it moves to a new block (untracked, as any
 * allocation made then) and the old one is freed when the monitor returns,
 * as free() does then. */
MONITOR_TEXT static void *realloc_while_busy(void *old, size_t size)
{
    if (!old || atomic_load(&monitor_status) != MONITOR_ACTIVE)
        return realloc_unrecorded(old, size);
    void *block = size ? real.malloc(size) : NULL;
    if (!block && size)
        return NULL; /* errno is ENOMEM; old stays as it was */
    if (block) {
        monitor_count_untracked();
        size_t old_size = usable_size(old);
        memcpy(block, old, old_size < size ? old_size : size);
    }
    if (!monitor_defer_free(old, MPROF_SUM_FREE_CALLS)) {
        if (block) {
            real.free(block);
            return realloc_unrecorded(old, size);
        }
        real_free_any(old);
    }
    return block;
}

/* realloc of a block with a header: the header moves with the block. */
MONITOR_TEXT static void *realloc_with_header(void *old, size_t size)
{
    struct block_header header = *header_of(old);
    struct block_info info = {header.size, header.record};
    bool known = header.record != BLOCK_HEADER_UNTRACKED;
    uint64_t sequence = trace_release_sequence();
    if (size == 0) { /* glibc frees the block and returns NULL */
        monitor_released(old, known, &info, sequence, true);
        real.free(header_released(old));
        monitor_count(MPROF_SUM_REALLOC_CALLS, MPROF_SUM_REALLOC_CALLS);
        return NULL;
    }
    void *block = real_realloc_with_header(old, size);
    if (!block) {
        monitor_count(MPROF_SUM_FAILED_ALLOCS, MPROF_SUM_REALLOC_CALLS);
        return NULL;
    }
    monitor_released(old, known, &info, sequence, false);
    monitor_alloc(block, size, MPROF_SUM_REALLOC_CALLS, true);
    return block;
}

MONITOR_TEXT static void *realloc_tracked(void *old, size_t size)
{
    if (!old && monitor.block_headers)
        return recorded(real_malloc_with_header(size), size, MPROF_SUM_REALLOC_CALLS, true);
    if (!old)
        return recorded(real.realloc(NULL, size), size, MPROF_SUM_REALLOC_CALLS, false);
    if (has_header(old))
        return realloc_with_header(old, size);
    return realloc_in_map(real.realloc, old, size);
}

EXPORT MONITOR_TEXT void *realloc(void *old, size_t size)
{
    UNLESS_ACTIVE(old ? realloc_while_starting(old, size) : early(size, 16), realloc_unrecorded(old, size));
    if (unlikely(old && is_early(old)))
        return realloc_early(old, size);
    if (unlikely(monitor_tls.busy))
        return realloc_while_busy(old, size);
    return realloc_tracked(old, size);
}

/* glibc's reallocarray calls realloc through the PLT, which would reach the
 * wrapper above a second time; so the overflow check is done here and the
 * rest is realloc's. */
EXPORT MONITOR_TEXT void *reallocarray(void *old, size_t count, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        if (atomic_load(&monitor_status) == MONITOR_ACTIVE && !monitor_tls.busy)
            monitor_count(MPROF_SUM_FAILED_ALLOCS, MPROF_SUM_REALLOC_CALLS);
        errno = ENOMEM;
        return NULL;
    }
    UNLESS_ACTIVE(old ? realloc_while_starting(old, total) : early(total, 16), realloc_unrecorded(old, total));
    if (unlikely(old && is_early(old)))
        return realloc_early(old, total);
    if (unlikely(monitor_tls.busy))
        return realloc_while_busy(old, total);
    return realloc_tracked(old, total);
}

EXPORT MONITOR_TEXT int posix_memalign(void **result, size_t alignment, size_t size)
{
    int status = atomic_load(&monitor_status);
    if (unlikely(status != MONITOR_ACTIVE || monitor_tls.busy)) {
        if (status == MONITOR_UNINITIALISED) {
            monitor_init();
            return posix_memalign(result, alignment, size);
        }
        if (status == MONITOR_STARTING) {
            void *block = early(size, alignment);
            if (!block)
                return ENOMEM;
            *result = block;
            return 0;
        }
        return real.posix_memalign(result, alignment, size);
    }
    int error = real.posix_memalign(result, alignment, size);
    monitor_tls.trace_alignment = alignment;
    if (error == 0)
        monitor_alloc(*result, size, MPROF_SUM_MEMALIGN_CALLS, false);
    else
        monitor_count(MPROF_SUM_FAILED_ALLOCS, MPROF_SUM_MEMALIGN_CALLS);
    return error;
}

#define ALIGNED_WRAPPER(name, params, args, size_expr, early_alignment)              \
    EXPORT MONITOR_TEXT void *name params                                            \
    {                                                                                \
        UNLESS_ACTIVE(early(size_expr, early_alignment), real.name args);            \
        if (unlikely(monitor_tls.busy))                                              \
            return real.name args;                                                   \
        monitor_tls.trace_alignment = early_alignment;                               \
        return recorded(real.name args, size_expr, MPROF_SUM_MEMALIGN_CALLS, false); \
    }

ALIGNED_WRAPPER(aligned_alloc, (size_t alignment, size_t size), (alignment, size), size, alignment)
ALIGNED_WRAPPER(memalign, (size_t alignment, size_t size), (alignment, size), size, alignment)
ALIGNED_WRAPPER(valloc, (size_t size), (size), size, 4096)
ALIGNED_WRAPPER(pvalloc, (size_t size), (size), size, 4096)

EXPORT size_t malloc_usable_size(void *block)
{
    if (block && is_early(block))
        return early_size(block);
    if (unlikely(!real.malloc_usable_size))
        return 0;
    return usable_size(block);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    monitor_before_exec();
    return real.execve(path, argv, (char *const *)monitor_exec_environment(envp));
}

EXPORT int execv(const char *path, char *const argv[])
{
    monitor_before_exec();
    return real.execve(path, argv, (char *const *)monitor_exec_environment(environ));
}

EXPORT int execvp(const char *file, char *const argv[])
{
    monitor_before_exec();
    return real.execvpe(file, argv, (char *const *)monitor_exec_environment(environ));
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    monitor_before_exec();
    return real.execvpe(file, argv, (char *const *)monitor_exec_environment(envp));
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    monitor_before_exec();
    return real.fexecve(fd, argv, (char *const *)monitor_exec_environment(envp));
}

/* exit() reaches the file through atexit; _exit and _Exit end the process
 * at once, so they write it first.  (glibc's exit and quick_exit call its
 * own _exit directly, not these.)  Inlined, so that the program's call is
 * the caller LEAK_CALLER_INIT sees. */
__attribute__((always_inline)) static inline _Noreturn void end_now(int status)
{
    struct leak_caller caller;
    LEAK_CALLER_INIT(&caller);
    monitor_finish(0, &caller);
    if (real.exit_now)
        real.exit_now(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

EXPORT void _exit(int status)
{
    end_now(status);
}

EXPORT void _Exit(int status)
{
    end_now(status);
}

EXPORT int dlclose(void *handle)
{
    monitor_before_dlclose();
    int result = real.dlclose(handle);
    monitor_after_dlclose();
    return result;
}

/* Only to know that the process is no longer single-threaded; see
 * monitor.threads_started. */
EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attributes,
                          void *(*start)(void *), void *argument)
{
    atomic_store(&monitor.threads_started, true);
    int (*next)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) = real.pthread_create;
    if (!next) /* before the monitor resolved it */
        next = (__typeof__(next))dlsym(RTLD_NEXT, "pthread_create");
    return next ? next(thread, attributes, start, argument) : EAGAIN;
}

EXPORT int execl(const char *path, const char *argument, ...)
{
    COLLECT_ARGUMENTS(argument, arguments, (void)0);
    return execv(path, arguments);
}

EXPORT int execlp(const char *file, const char *argument, ...)
{
    COLLECT_ARGUMENTS(argument, arguments, (void)0);
    return execvp(file, arguments);
}

EXPORT int execle(const char *path, const char *argument, ...)
{
    char *const *envp;
    COLLECT_ARGUMENTS(argument, arguments, envp = va_arg(pieces_, char *const *));
    return execve(path, arguments, envp);
}
