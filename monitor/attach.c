/* mprof attach and detach (mprof(1)): the functions mprof-inject calls in a
 * running process that it made load this library with dlopen.  Attaching
 * starts the monitor and routes every module's calls to the allocator, to
 * dlopen (to route the modules loaded later) and to the exec family,
 * through the monitor (got.h); detaching routes them back and writes the
 * file, and so does an exec, whose new program has no monitor to write it.
 * The library stays loaded: a pointer to one of its functions the program
 * copied while attached still works, and forwards.  A second attach loads
 * another copy (mprof attach copies the file), which starts afresh; one
 * copy at a time is attached. */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "compiler.h"
#include "exec_arguments.h"
#include "got.h"
#include "leak_scan.h"
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
#define NAMED_COUNT (sizeof routed_names / sizeof *routed_names)

/* Serialises routing: attach, the routed dlopen, detach, exec. */
static spinlock_t routing_lock = SPINLOCK_INIT;
/* Whether the slots are routed: set by attach, cleared by detach, under
 * routing_lock. */
static bool routed;
/* The copy attached, when this is the oldest copy loaded: its own address
 * of this word, 0 when none is.  Every copy finds the oldest's (copies
 * stay loaded), so the claim is one compare-and-swap for the process. */
static _Atomic(uintptr_t) attached_copy;
/* Set by mprof_attach before it claims; read-only after. */
static _Atomic(uintptr_t) *claim;

/* Neither a copy of libmprof nor mprof-inject's helper, nor the dynamic
 * loader and the vDSO, whose calls are their own. */
static bool not_the_programs(const struct dl_phdr_info *module)
{
    const char *name = module->dlpi_name ? module->dlpi_name : "";
    return strstr(name, "libmprof") || strstr(name, "/ld-linux") || strstr(name, "linux-vdso");
}

static void *routed_dlopen(const char *file, int flags);
static int attached_execve(const char *path, char *const argv[], char *const envp[]);
static int attached_execv(const char *path, char *const argv[]);
static int attached_execvp(const char *file, char *const argv[]);
static int attached_execvpe(const char *file, char *const argv[], char *const envp[]);
static int attached_fexecve(int fd, char *const argv[], char *const envp[]);
static int attached_execl(const char *path, const char *argument, ...);
static int attached_execlp(const char *file, const char *argument, ...);
static int attached_execle(const char *path, const char *argument, ...);

/* Routed to functions of this file. */
static const struct got_route own_routes[] = {
    {"dlopen", (void *)routed_dlopen},       {"execve", (void *)attached_execve},
    {"execv", (void *)attached_execv},       {"execvp", (void *)attached_execvp},
    {"execvpe", (void *)attached_execvpe},   {"fexecve", (void *)attached_fexecve},
    {"execl", (void *)attached_execl},       {"execlp", (void *)attached_execlp},
    {"execle", (void *)attached_execle},
};
#define ROUTE_COUNT (NAMED_COUNT + sizeof own_routes / sizeof *own_routes)
/* Written by mprof_attach before any slot is routed; read-only after. */
static struct got_route routes[ROUTE_COUNT];

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
    void *self = dlopen(own.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!self)
        return false;
    bool found = true;
    for (size_t i = 0; i < NAMED_COUNT; i++) {
        routes[i] = (struct got_route){routed_names[i], dlsym(self, routed_names[i])};
        found = found && routes[i].replacement;
    }
    memcpy(routes + NAMED_COUNT, own_routes, sizeof own_routes);
    dlclose(self);
    return found && real.dlopen;
}

/* A copy of libmprof that mprof attach loaded: libmprof.so in a directory
 * of its own (src/mprof/attach/inject.py), not the helper beside it. */
static bool is_copy(const char *name)
{
    const char *directory = strstr(name, "/mprof-attach-");
    const char *base = strrchr(name, '/');
    return directory && base && !strcmp(base, "/libmprof.so");
}

static int find_oldest_copy(struct dl_phdr_info *module, size_t size, void *oldest)
{
    (void)size;
    if (!module->dlpi_name || !is_copy(module->dlpi_name))
        return 0;
    *(const char **)oldest = module->dlpi_name;
    return 1;
}

/* The oldest copy's word, from its own handle; this copy's when the
 * oldest cannot say (it is this one). */
static _Atomic(uintptr_t) *find_claim(void)
{
    const char *oldest = NULL;
    dl_iterate_phdr(find_oldest_copy, &oldest);
    void *handle = oldest ? dlopen(oldest, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    _Atomic(uintptr_t) *(*word_of)(void) =
        handle ? (_Atomic(uintptr_t) * (*)(void)) dlsym(handle, "mprof_attach_claim") : NULL;
    _Atomic(uintptr_t) *word = word_of ? word_of() : &attached_copy;
    if (handle)
        dlclose(handle);
    return word;
}

EXPORT _Atomic(uintptr_t) *mprof_attach_claim(void)
{
    return &attached_copy;
}

/* 1 while a copy of the monitor is attached to the process, else 0: mprof
 * attach asks before it loads another. */
EXPORT int mprof_attached(const char *unused)
{
    (void)unused;
    return atomic_load(find_claim()) != 0;
}

/* 0: attached; 1: a copy is attached already, or the monitor runs
 * preloaded; 2: the monitor could not start; 3: a module's calls could
 * not be routed (the monitor records what the others call). */
EXPORT int mprof_attach(const char *output)
{
    claim = find_claim();
    uintptr_t none = 0;
    if (!atomic_compare_exchange_strong(claim, &none, (uintptr_t)&attached_copy))
        return 1;
    int refused = 0;
    if (!monitor_start_attached(output))
        refused = atomic_load(&monitor_status) == MONITOR_ACTIVE ? 1 : 2;
    else if (!find_routes())
        monitor_finish(0, NULL), refused = 2;
    if (refused) {
        atomic_store(claim, 0);
        return refused;
    }
    spin_lock(&routing_lock);
    bool all = got_route(routes, ROUTE_COUNT, not_the_programs);
    routed = true;
    spin_unlock(&routing_lock);
    return all ? 0 : 3;
}

/* Routes the slots back and writes the file; false when not attached. */
static bool end_attachment(void)
{
    spin_lock(&routing_lock);
    bool was_routed = routed;
    if (routed)
        got_unroute();
    routed = false;
    spin_unlock(&routing_lock);
    if (!was_routed || !monitor.attached)
        return false;
    struct leak_caller caller;
    LEAK_CALLER_INIT(&caller);
    monitor_finish(0, &caller);
    atomic_store(claim, 0);
    return true;
}

/* 0: detached, the file written; 1: not attached. */
EXPORT int mprof_detach(const char *unused)
{
    (void)unused;
    return end_attachment() ? 0 : 1;
}

/* An exec ends the attachment, as a detach does, before the new program
 * replaces the monitor; one that fails leaves the process running
 * unprofiled.  Not in a fork or vfork child, whose exec is its own (and a
 * vfork child's memory its parent's). */
static void before_exec(void)
{
    if (getpid() == monitor.pid && atomic_load(&monitor_status) == MONITOR_ACTIVE)
        end_attachment();
}

static int attached_execve(const char *path, char *const argv[], char *const envp[])
{
    before_exec();
    return real.execve(path, argv, envp);
}

static int attached_execv(const char *path, char *const argv[])
{
    before_exec();
    return real.execve(path, argv, environ);
}

static int attached_execvp(const char *file, char *const argv[])
{
    before_exec();
    return real.execvpe(file, argv, environ);
}

static int attached_execvpe(const char *file, char *const argv[], char *const envp[])
{
    before_exec();
    return real.execvpe(file, argv, envp);
}

static int attached_fexecve(int fd, char *const argv[], char *const envp[])
{
    before_exec();
    return real.fexecve(fd, argv, envp);
}

static int attached_execl(const char *path, const char *argument, ...)
{
    COLLECT_ARGUMENTS(argument, arguments, (void)0);
    return attached_execv(path, arguments);
}

static int attached_execlp(const char *file, const char *argument, ...)
{
    COLLECT_ARGUMENTS(argument, arguments, (void)0);
    return attached_execvp(file, arguments);
}

static int attached_execle(const char *path, const char *argument, ...)
{
    char *const *envp;
    COLLECT_ARGUMENTS(argument, arguments, envp = va_arg(pieces_, char *const *));
    return attached_execve(path, arguments, envp);
}
