/* What both floors share: the allocator functions forwarded to the next
 * object's (libc's), found with dlsym, and a small static buffer for
 * dlsym's own calloc before they are known.  ON_ALLOCATION is what each
 * floor adds to every allocation. */
#ifndef MPROF_BENCH_FORWARD_H
#define MPROF_BENCH_FORWARD_H

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#ifndef ON_ALLOCATION
#error "define ON_ALLOCATION before including forward.h"
#endif

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);

/* dlsym's calloc, while the real one is being looked up; never freed. */
static char bootstrap[4096] __attribute__((aligned(16)));
static size_t bootstrap_used;
static int resolving;

static void resolve(void)
{
    resolving = 1;
    next_malloc = dlsym(RTLD_NEXT, "malloc");
    next_free = dlsym(RTLD_NEXT, "free");
    next_realloc = dlsym(RTLD_NEXT, "realloc");
    next_calloc = dlsym(RTLD_NEXT, "calloc");
    resolving = 0;
}

void *malloc(size_t size)
{
    if (!next_malloc)
        resolve();
    ON_ALLOCATION;
    return next_malloc(size);
}

void *calloc(size_t count, size_t size)
{
    if (resolving) {
        size_t total = (count * size + 15) & ~(size_t)15;
        void *block = bootstrap + bootstrap_used;
        bootstrap_used += total;
        return bootstrap_used <= sizeof bootstrap ? block : NULL;
    }
    if (!next_calloc)
        resolve();
    ON_ALLOCATION;
    return next_calloc(count, size);
}

void *realloc(void *block, size_t size)
{
    if (!next_realloc)
        resolve();
    ON_ALLOCATION;
    return next_realloc(block, size);
}

void free(void *block)
{
    if ((char *)block >= bootstrap && (char *)block < bootstrap + sizeof bootstrap)
        return;
    if (!next_free)
        resolve();
    next_free(block);
}

#endif
