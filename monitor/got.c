/* Finding and rewriting global offset table slots (see got.h).  A module's
 * dynamic section names its relocations: those of type JUMP_SLOT (calls
 * through the PLT) and GLOB_DAT (calls and addresses taken through the
 * GOT, -fno-plt) for a routed symbol are the slots.  Slots in the module's
 * RELRO segment are read-only once loaded: made writable for the store,
 * read-only again after. */
#include "got.h"

#include <elf.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena.h"

struct routed_slot {
    void **slot;
    void *original;
    void *replacement;
};

/* Guarded by the callers' serialisation (attach.c's lock). */
static struct routed_slot *routed;
static size_t routed_count, routed_capacity;

struct walk {
    const struct got_route *routes;
    size_t count;
    bool (*skip)(const struct dl_phdr_info *module);
    bool ok;
};

/* What a dynamic entry points to: the loader has relocated most of them in
 * place, but not every module's. */
static uintptr_t dynamic_address(const struct dl_phdr_info *module, ElfW(Addr) value)
{
    return value < module->dlpi_addr ? module->dlpi_addr + value : value;
}

static bool remember(void **slot, void *original, void *replacement)
{
    if (routed_count == routed_capacity) {
        size_t capacity = routed_capacity ? routed_capacity * 2 : 256;
        struct routed_slot *grown =
            routed ? region_grow(routed, routed_capacity * sizeof *routed, capacity * sizeof *routed)
                   : region_map(capacity * sizeof *routed);
        if (!grown)
            return false;
        routed = grown;
        routed_capacity = capacity;
    }
    routed[routed_count++] = (struct routed_slot){slot, original, replacement};
    return true;
}

/* Stores value in slot, through its page's protection when the module's
 * RELRO segment holds it. */
static bool store(void **slot, void *value, uintptr_t relro_start, uintptr_t relro_end)
{
    uintptr_t address = (uintptr_t)slot;
    if (address < relro_start || address >= relro_end) {
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
        return true;
    }
    uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    void *page = (void *)(address & ~(page_size - 1));
    if (mprotect(page, page_size, PROT_READ | PROT_WRITE) != 0)
        return false;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    mprotect(page, page_size, PROT_READ);
    return true;
}

static void relro_of(const struct dl_phdr_info *module, uintptr_t *start, uintptr_t *end)
{
    *start = *end = 0;
    for (unsigned i = 0; i < module->dlpi_phnum; i++)
        if (module->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            *start = module->dlpi_addr + module->dlpi_phdr[i].p_vaddr;
            *end = *start + module->dlpi_phdr[i].p_memsz;
        }
}

static void route_relocations(const struct dl_phdr_info *module, const ElfW(Rela) *relocations, size_t size,
                              const ElfW(Sym) *symbols, const char *names, struct walk *walk)
{
    uintptr_t relro_start, relro_end;
    relro_of(module, &relro_start, &relro_end);
    for (size_t i = 0; i < size / sizeof *relocations; i++) {
        unsigned long type = ELF64_R_TYPE(relocations[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        const char *name = names + symbols[ELF64_R_SYM(relocations[i].r_info)].st_name;
        for (size_t r = 0; r < walk->count; r++) {
            if (strcmp(name, walk->routes[r].name))
                continue;
            void **slot = (void **)(module->dlpi_addr + relocations[i].r_offset);
            void *original = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
            if (original == walk->routes[r].replacement)
                break; /* routed already */
            if (!remember(slot, original, walk->routes[r].replacement)) {
                walk->ok = false;
            } else if (!store(slot, walk->routes[r].replacement, relro_start, relro_end)) {
                routed_count--; /* left as it was */
                walk->ok = false;
            }
            break;
        }
    }
}

static int route_module(struct dl_phdr_info *module, size_t size, void *context)
{
    (void)size;
    struct walk *walk = context;
    if (walk->skip(module))
        return 0;
    const ElfW(Dyn) *dynamic = NULL;
    for (unsigned i = 0; i < module->dlpi_phnum; i++)
        if (module->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dynamic = (const ElfW(Dyn) *)(module->dlpi_addr + module->dlpi_phdr[i].p_vaddr);
    if (!dynamic)
        return 0;
    const ElfW(Sym) *symbols = NULL;
    const char *names = NULL;
    const ElfW(Rela) *plt = NULL, *data = NULL;
    size_t plt_size = 0, data_size = 0;
    for (const ElfW(Dyn) *entry = dynamic; entry->d_tag != DT_NULL; entry++) {
        switch (entry->d_tag) {
        case DT_SYMTAB:
            symbols = (const ElfW(Sym) *)dynamic_address(module, entry->d_un.d_ptr);
            break;
        case DT_STRTAB:
            names = (const char *)dynamic_address(module, entry->d_un.d_ptr);
            break;
        case DT_JMPREL:
            plt = (const ElfW(Rela) *)dynamic_address(module, entry->d_un.d_ptr);
            break;
        case DT_PLTRELSZ:
            plt_size = entry->d_un.d_val;
            break;
        case DT_RELA:
            data = (const ElfW(Rela) *)dynamic_address(module, entry->d_un.d_ptr);
            break;
        case DT_RELASZ:
            data_size = entry->d_un.d_val;
            break;
        }
    }
    if (!symbols || !names)
        return 0;
    if (plt)
        route_relocations(module, plt, plt_size, symbols, names, walk);
    if (data)
        route_relocations(module, data, data_size, symbols, names, walk);
    return 0;
}

bool got_route(const struct got_route *routes, size_t count, bool (*skip)(const struct dl_phdr_info *module))
{
    struct walk walk = {routes, count, skip, true};
    dl_iterate_phdr(route_module, &walk);
    return walk.ok;
}

/* Whether address lies in a loaded segment of the module. */
static bool in_module(const struct dl_phdr_info *module, uintptr_t address)
{
    for (unsigned i = 0; i < module->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &module->dlpi_phdr[i];
        uintptr_t start = module->dlpi_addr + segment->p_vaddr;
        if (segment->p_type == PT_LOAD && address >= start && address < start + segment->p_memsz)
            return true;
    }
    return false;
}

static int unroute_module(struct dl_phdr_info *module, size_t size, void *context)
{
    (void)size;
    (void)context;
    uintptr_t relro_start, relro_end;
    relro_of(module, &relro_start, &relro_end);
    for (size_t i = 0; i < routed_count; i++) {
        if (!routed[i].slot || !in_module(module, (uintptr_t)routed[i].slot))
            continue;
        /* A slot the program itself rewrote since is left as it is. */
        if (__atomic_load_n(routed[i].slot, __ATOMIC_ACQUIRE) == routed[i].replacement)
            store(routed[i].slot, routed[i].original, relro_start, relro_end);
        routed[i].slot = NULL;
    }
    return 0;
}

void got_unroute(void)
{
    dl_iterate_phdr(unroute_module, NULL);
    routed_count = 0; /* those of modules unloaded meanwhile are gone with them */
}
