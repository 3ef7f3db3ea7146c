/* mprof attach and detach (mprof(1)): the functions mprof-inject calls in a
 * running process that it made load this library with dlopen.  Attaching
 * starts the monitor and routes every module's calls to the allocator, and
 * to dlopen (to route the modules loaded later), through the monitor
 * (got.h); detaching routes them back and writes the file.  The library
 * stays loaded: a pointer to one of its functions the program copied while
 * attached still works, and forwards.  A second attach loads another copy
 * (mprof attach copies the file), which starts afresh. */
#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

#include "compiler.h"
#include "got.h"
#include "lock.h"
#include "monitor.h"
#include "real.h"
#include "state.h"

/* The allocator's functions and C++'s operators, and those the monitor
 * must see called, as modules import them; routed to this library's
 * definitions of the same names. */
static const char *const routed_names[] = {
    "malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign", "valloc",
    "pvalloc", "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t",
    "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t", "_ZdlPv",
    "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t", "_ZdlPvSt11align_val_t",
    "_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t", "dlclose",
    "pthread_create", /* to know when the process is no longer single-threaded */
};
#define ROUTE_COUNT (sizeof routed_names / sizeof *routed_names + 1) /* and dlopen */

/* Written by mprof_attach before any slot is routed; read-only after. */
static struct got_route routes[ROUTE_COUNT];
static void *own_base;
/* Serialises routing: attach, the routed dlopen, detach. */
static spinlock_t routing_lock = SPINLOCK_INIT;
/* Whether the slots are routed: set by attach, cleared by detach, under
 * routing_lock. */
static bool routed;

/* Neither this library (nor an earlier attach's copy), nor the dynamic
 * loader and the vDSO, whose calls are their own. */
static bool not_the_programs(const struct dl_phdr_info *module)
{
    const char *name = module->dlpi_name ? module->dlpi_name : "";
    return (void *)module->dlpi_addr == own_base || strstr(name, "libmprof") || strstr(name, "/ld-linux") ||
           strstr(name, "linux-vdso");
}

static void *routed_dlopen(const char *file, int flags)
{
    void *handle = real.dlopen(file, flags);
    if (handle) {
        spin_lock(&routing_lock);
        if (routed)
            got_route(routes, ROUTE_COUNT, not_the_programs);
        spin_unlock(&routing_lock);
    }
    return handle;
}

/* This library's own definitions: looked up in its own handle, since a
 * reference from inside it would bind to the process's. */
static bool find_routes(void)
{
    Dl_info own;
    if (!dladdr((void *)find_routes, &own) || !own.dli_fname)
        return false;
    own_base = own.dli_fbase;
    void *self = dlopen(own.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!self)
        return false;
    bool found = true;
    for (size_t i = 0; i < ROUTE_COUNT - 1; i++) {
        routes[i] = (struct got_route){routed_names[i], dlsym(self, routed_names[i])};
        found = found && routes[i].replacement;
    }
    routes[ROUTE_COUNT - 1] = (struct got_route){"dlopen", (void *)routed_dlopen};
    dlclose(self);
    return found && real.dlopen;
}

/* 0: attached; 1: attached already, or the monitor runs preloaded; 2: the
 * monitor could not start; 3: a module's calls could not be routed (the
 * monitor records what the others call). */
EXPORT int mprof_attach(const char *output)
{
    if (!monitor_start_attached(output))
        return atomic_load(&monitor_status) == MONITOR_ACTIVE ? 1 : 2;
    if (!find_routes()) {
        monitor_finish(0);
        return 2;
    }
    spin_lock(&routing_lock);
    bool all = got_route(routes, ROUTE_COUNT, not_the_programs);
    routed = true;
    spin_unlock(&routing_lock);
    return all ? 0 : 3;
}

/* 0: detached, the file written; 1: not attached. */
EXPORT int mprof_detach(const char *unused)
{
    (void)unused;
    spin_lock(&routing_lock);
    bool was_routed = routed;
    if (routed)
        got_unroute();
    routed = false;
    spin_unlock(&routing_lock);
    if (!was_routed || !monitor.attached)
        return 1;
    monitor_finish(0);
    return 0;
}
