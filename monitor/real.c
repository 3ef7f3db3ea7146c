/* Finding the wrapped functions of real.h with dlsym: RTLD_NEXT when
 * preloaded, RTLD_DEFAULT when attached (the program's own allocator, which
 * may not be glibc's). */
#include "real.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "compiler.h"

struct real_functions real;

/* Bump-allocated, never reused; each block is preceded by its size.
 * early_used is claimed with compare-and-swap, so any thread may allocate. */
#define EARLY_POOL_SIZE (256u * 1024u)
static _Alignas(64) char early_pool[EARLY_POOL_SIZE];
static atomic_size_t early_used;

void *early_alloc(size_t size, size_t alignment)
{
    if (alignment < 16)
        alignment = 16;
    if (size > EARLY_POOL_SIZE || alignment > 4096)
        return NULL;
    size_t used = atomic_load(&early_used);
    for (;;) {
        size_t start = (used + 16 + alignment - 1) & ~(alignment - 1);
        size_t end = start + ((size + 15) & ~(size_t)15);
        if (end > EARLY_POOL_SIZE)
            return NULL;
        if (atomic_compare_exchange_weak(&early_used, &used, end)) {
            memcpy(early_pool + start - sizeof(size_t), &size, sizeof(size_t));
            return early_pool + start;
        }
    }
}

int is_early(const void *block)
{
    return (const char *)block >= early_pool && (const char *)block < early_pool + EARLY_POOL_SIZE;
}

size_t early_size(const void *block)
{
    size_t size;
    memcpy(&size, (const char *)block - sizeof(size_t), sizeof(size_t));
    return size;
}

/* Whether a function comes from glibc's libc.so. */
static bool from_glibc(void *function, const void **base)
{
    Dl_info info;
    if (!function || !dladdr(function, &info) || !info.dli_fname)
        return false;
    const char *name = strrchr(info.dli_fname, '/');
    name = name ? name + 1 : info.dli_fname;
    *base = info.dli_fbase;
    return !strncmp(name, "libc.so.", 8);
}

bool real_allocator_is_glibc(void)
{
    void *functions[] = {(void *)real.malloc, (void *)real.free, (void *)real.calloc, (void *)real.realloc,
                         (void *)real.malloc_usable_size};
    const void *libc = NULL;
    for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) {
        const void *base;
        if (!from_glibc(functions[i], &base) || (libc && base != libc))
            return false;
        libc = base;
    }
    return true;
}

/* Whether address is where a module defines name: not the PLT entry of a
 * program built without -fPIE that takes the function's address, which the
 * dynamic loader gives as the function to every lookup, and which calls
 * through the program's GOT slot, routed to the monitor when attached. */
static bool defined_at(void *address)
{
    Dl_info info; /* a symbol defined there, by this name or an alias (__libc_malloc) */
    const ElfW(Sym) *symbol = NULL;
    return address && dladdr1(address, &info, (void **)&symbol, RTLD_DL_SYMENT) && info.dli_saddr == address &&
           symbol && symbol->st_shndx != SHN_UNDEF;
}

struct definition {
    const char *name;
    void *address;
};

static int find_definition(struct dl_phdr_info *module, size_t size, void *context)
{
    (void)size;
    struct definition *wanted = context;
    const char *name = module->dlpi_name;
    if (!name || !*name || strstr(name, "libmprof")) /* the program's PLT entry; a monitor */
        return 0;
    void *handle = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle)
        return 0;
    void *address = dlsym(handle, wanted->name);
    dlclose(handle);
    if (!defined_at(address))
        return 0;
    wanted->address = address;
    return 1;
}

/* The function the process's own calls reach: RTLD_DEFAULT's, unless that
 * is a PLT entry; then the first module's, in the order they were loaded,
 * that defines it. */
static void *attached_lookup(const char *name)
{
    void *address = dlsym(RTLD_DEFAULT, name);
    if (!address || defined_at(address))
        return address;
    struct definition wanted = {name, NULL};
    dl_iterate_phdr(find_definition, &wanted);
    return wanted.address;
}

#define RESOLVE(field, name) \
    (real.field = (__typeof__(real.field))(attached ? attached_lookup(name) : dlsym(RTLD_NEXT, name)))

int real_functions_resolve(bool attached)
{
    RESOLVE(malloc, "malloc");
    RESOLVE(free, "free");
    RESOLVE(calloc, "calloc");
    RESOLVE(realloc, "realloc");
    RESOLVE(posix_memalign, "posix_memalign");
    RESOLVE(aligned_alloc, "aligned_alloc");
    RESOLVE(memalign, "memalign");
    RESOLVE(valloc, "valloc");
    RESOLVE(pvalloc, "pvalloc");
    RESOLVE(malloc_usable_size, "malloc_usable_size");
    RESOLVE(execve, "execve");
    RESOLVE(execvpe, "execvpe");
    RESOLVE(fexecve, "fexecve");
    RESOLVE(exit_now, "_exit");
    RESOLVE(dlclose, "dlclose");
    RESOLVE(dlopen, "dlopen");
    RESOLVE(pthread_create, "pthread_create");
    RESOLVE(mmap, "mmap");
    RESOLVE(munmap, "munmap");
    RESOLVE(mremap, "mremap");
    RESOLVE(brk, "brk");
    RESOLVE(sbrk, "sbrk");
    RESOLVE(new_nothrow, "_ZnwmRKSt9nothrow_t");
    RESOLVE(new_array_nothrow, "_ZnamRKSt9nothrow_t");
    RESOLVE(new_aligned_nothrow, "_ZnwmSt11align_val_tRKSt9nothrow_t");
    RESOLVE(new_array_aligned_nothrow, "_ZnamSt11align_val_tRKSt9nothrow_t");
    RESOLVE(get_new_handler, "_ZSt15get_new_handlerv");
    RESOLVE(throw_bad_alloc, "_ZSt17__throw_bad_allocv");
    return real.malloc && real.free && real.calloc && real.realloc && real.posix_memalign &&
           real.memalign && real.aligned_alloc && real.valloc && real.pvalloc &&
           real.malloc_usable_size;
}
