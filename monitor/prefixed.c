/* A second allocator with prefixed entry points (MPROF_ALLOCATOR_PREFIX,
 * mprof run --allocator-prefix je_): jemalloc built with a prefix,
 * tcmalloc's tc_ functions, mimalloc's mi_.  The library is loaded beside
 * glibc, so LD_PRELOAD cannot put the monitor in front of it under names it
 * does not know; instead every other module's calls to it are routed
 * through the global offset tables (got.h) to the wrappers below, which
 * count its blocks in the pointer map as the malloc family's are. */
#include "prefixed.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "executable.h"
#include "got.h"
#include "mapped.h"
#include "wrap.h"

/* The allocator's own entry points; written by prefixed_route before any
 * slot is routed to a wrapper, read-only after. */
static struct {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void (*free)(void *);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
} next;

/* The module that defines them, whose calls among its own functions are
 * its business, and the monitor's; set with next. */
static char allocator_module[4096];
static const char *monitor_module;

/* Whether a call is recorded: else it goes straight to the allocator
 * (the monitor not started yet or off, or busy on this thread). */
static inline bool recording(void)
{
    return atomic_load_explicit(&monitor_status, memory_order_acquire) == MONITOR_ACTIVE && !monitor_tls.busy;
}

MONITOR_TEXT static void *prefixed_malloc(size_t size)
{
    if (!recording())
        return next.malloc(size);
    return recorded(next.malloc(size), size, MPROF_SUM_MALLOC_CALLS, false);
}

MONITOR_TEXT static void *prefixed_calloc(size_t count, size_t size)
{
    if (!recording())
        return next.calloc(count, size);
    size_t total;
    if (__builtin_mul_overflow(count, size, &total))
        total = SIZE_MAX;
    return recorded(next.calloc(count, size), total, MPROF_SUM_CALLOC_CALLS, false);
}

MONITOR_TEXT static void prefixed_free(void *block)
{
    if (!recording()) {
        next.free(block);
        return;
    }
    /* Out of the map first: no other thread may be given the address
     * while it is still there. */
    monitor_free(block, MPROF_SUM_FREE_CALLS);
    next.free(block);
}

MONITOR_TEXT static void *prefixed_realloc(void *old, size_t size)
{
    if (!recording())
        return next.realloc(old, size);
    if (!old)
        return recorded(next.realloc(NULL, size), size, MPROF_SUM_REALLOC_CALLS, false);
    return realloc_in_map(next.realloc, old, size);
}

MONITOR_TEXT static int prefixed_posix_memalign(void **result, size_t alignment, size_t size)
{
    if (!recording())
        return next.posix_memalign(result, alignment, size);
    int error = next.posix_memalign(result, alignment, size);
    if (error)
        monitor_count(MPROF_SUM_FAILED_ALLOCS, MPROF_SUM_MEMALIGN_CALLS);
    else
        monitor_alloc(*result, size, MPROF_SUM_MEMALIGN_CALLS, false);
    return error;
}

MONITOR_TEXT static void *prefixed_aligned_alloc(size_t alignment, size_t size)
{
    if (!recording())
        return next.aligned_alloc(alignment, size);
    return recorded(next.aligned_alloc(alignment, size), size, MPROF_SUM_MEMALIGN_CALLS, false);
}

MONITOR_TEXT static void *prefixed_memalign(size_t alignment, size_t size)
{
    if (!recording())
        return next.memalign(alignment, size);
    return recorded(next.memalign(alignment, size), size, MPROF_SUM_MEMALIGN_CALLS, false);
}

MONITOR_TEXT static void *prefixed_valloc(size_t size)
{
    if (!recording())
        return next.valloc(size);
    return recorded(next.valloc(size), size, MPROF_SUM_MEMALIGN_CALLS, false);
}

/* The allocator's module and the monitor's keep their own calls. */
static bool not_routed(const struct dl_phdr_info *module)
{
    const char *name = module->dlpi_name;
    return name && (!strcmp(name, allocator_module) || (monitor_module && !strcmp(name, monitor_module)));
}

struct executable_check {
    uintptr_t address;
    bool inside;
};

/* Whether the address lies in a loaded segment of the executable, the
 * first module listed: the walk stops there. */
static int in_executable(struct dl_phdr_info *module, size_t size, void *data)
{
    (void)size;
    struct executable_check *check = data;
    for (ElfW(Half) i = 0; i < module->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &module->dlpi_phdr[i];
        uintptr_t start = module->dlpi_addr + segment->p_vaddr;
        if (segment->p_type == PT_LOAD && check->address >= start && check->address - start < segment->p_memsz)
            check->inside = true;
    }
    return 1;
}

/* The entry point prefix + name, where another module can call it; NULL
 * when there is none. */
static void *entry_point(const char *prefix, const char *name)
{
    char symbol[128];
    if ((size_t)snprintf(symbol, sizeof symbol, "%s%s", prefix, name) >= sizeof symbol)
        return NULL;
    return dlsym(RTLD_DEFAULT, symbol);
}

enum prefixed_outcome prefixed_route(const char *prefix)
{
    struct {
        const char *name;
        void **next;
        void *wrapper;
    } entries[] = {
        {"malloc", (void **)&next.malloc, (void *)prefixed_malloc},
        {"calloc", (void **)&next.calloc, (void *)prefixed_calloc},
        {"realloc", (void **)&next.realloc, (void *)prefixed_realloc},
        {"free", (void **)&next.free, (void *)prefixed_free},
        {"posix_memalign", (void **)&next.posix_memalign, (void *)prefixed_posix_memalign},
        {"aligned_alloc", (void **)&next.aligned_alloc, (void *)prefixed_aligned_alloc},
        {"memalign", (void **)&next.memalign, (void *)prefixed_memalign},
        {"valloc", (void **)&next.valloc, (void *)prefixed_valloc},
    };
    enum { ENTRIES = sizeof entries / sizeof *entries };
    void *first = entry_point(prefix, "malloc");
    Dl_info where, own;
    if (!first) {
        /* Not exported: linked in, unless there is none at all. */
        char symbol[128];
        snprintf(symbol, sizeof symbol, "%smalloc", prefix);
        return executable_function(symbol) ? PREFIXED_IN_EXECUTABLE : PREFIXED_ABSENT;
    }
    if (!dladdr(first, &where) || !where.dli_fname)
        return PREFIXED_ABSENT;
    /* In the executable itself, its own calls are direct: none to route. */
    struct executable_check check = {(uintptr_t)first, false};
    dl_iterate_phdr(in_executable, &check);
    if (check.inside)
        return PREFIXED_IN_EXECUTABLE;
    size_t length = strlen(where.dli_fname);
    if (length >= sizeof allocator_module)
        return PREFIXED_ABSENT;
    memcpy(allocator_module, where.dli_fname, length + 1);
    if (dladdr((void *)prefixed_route, &own))
        monitor_module = own.dli_fname;
    /* The free of whatever it allocates must be there too, or its blocks
     * would stay live for ever. */
    struct got_route routes[ENTRIES];
    size_t count = 0;
    for (size_t i = 0; i < ENTRIES; i++) {
        *entries[i].next = entry_point(prefix, entries[i].name);
        if (*entries[i].next) {
            char *symbol = arena_alloc(strlen(prefix) + strlen(entries[i].name) + 1);
            if (!symbol)
                return PREFIXED_ABSENT;
            strcpy(symbol, prefix);
            strcat(symbol, entries[i].name);
            routes[count++] = (struct got_route){symbol, entries[i].wrapper};
        }
    }
    if (!next.free)
        return PREFIXED_ABSENT;
    mapped_allocator_module(first);
    return got_route(routes, count, not_routed) ? PREFIXED_ROUTED : PREFIXED_ABSENT;
}
