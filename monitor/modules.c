/* The module list of a data file: every object loaded now, and every one
 * seen before a dlclose and gone since. */
#include "modules.h"

#include <elf.h>
#include <link.h>
#include <sched.h>
#include <string.h>

#include "arena.h"
#include "lock.h"
#include "retag.h"

/* Modules seen before a dlclose: guarded by remembered_lock, kept for the
 * process's life (a few per dlclose'd library). */
static spinlock_t remembered_lock = SPINLOCK_INIT;
static struct module *remembered;
/* The list built for one write; only the writer touches it, under the
 * writer's own lock. */
static struct module *current;
static void *current_region;
static size_t current_region_size;
static size_t current_region_used;

static void read_build_id(struct dl_phdr_info *info, const ElfW(Phdr) *note_header,
                          struct module *module)
{
    const char *notes = (const char *)(info->dlpi_addr + note_header->p_vaddr);
    size_t offset = 0;
    while (offset + sizeof(ElfW(Nhdr)) <= note_header->p_memsz) {
        const ElfW(Nhdr) *note = (const ElfW(Nhdr) *)(notes + offset);
        size_t name_size = (note->n_namesz + 3) & ~3u;
        size_t description_size = (note->n_descsz + 3) & ~3u;
        const char *name = (const char *)(note + 1);
        if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
            note->n_descsz <= MODULE_BUILD_ID_MAX) {
            module->build_id_size = (uint8_t)note->n_descsz;
            memcpy(module->build_id, name + name_size, note->n_descsz);
            return;
        }
        offset += sizeof(ElfW(Nhdr)) + name_size + description_size;
    }
}

static size_t module_size(const char *path)
{
    size_t path_size = strlen(path);
    return sizeof(struct module) + (path_size > MODULE_PATH_MAX ? MODULE_PATH_MAX : path_size) + 1;
}

/* Fills module (module_size(path) bytes) from a loaded object; false when
 * the object has nothing loaded. */
static void load_range(const struct dl_phdr_info *info, uintptr_t *start, uintptr_t *end);

static bool describe(struct dl_phdr_info *info, const char *path, struct module *module)
{
    uintptr_t start, end;
    load_range(info, &start, &end);
    if (start >= end)
        return false;
    size_t path_size = module_size(path) - sizeof(struct module) - 1;
    *module = (struct module){0};
    module->bias = info->dlpi_addr;
    module->start = start;
    module->end = end;
    module->path_size = (uint16_t)path_size;
    memcpy(module->path, path, path_size);
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_NOTE && !module->build_id_size)
            read_build_id(info, &info->dlpi_phdr[i], module);
    return true;
}

static bool same_module(const struct module *a, const struct module *b)
{
    return a->start == b->start && a->end == b->end && a->path_size == b->path_size &&
           !memcmp(a->path, b->path, a->path_size);
}

/* The main program is the object with an empty name. */
static const char *path_of(const struct dl_phdr_info *info, const char *executable)
{
    return info->dlpi_name && *info->dlpi_name ? info->dlpi_name : executable;
}

/* A retagged module is a load of its own: the same file loaded there again
 * is another. */
static bool same_range_and_path(const struct module *module, uintptr_t start, uintptr_t end, const char *path)
{
    size_t path_size = module_size(path) - sizeof(struct module) - 1;
    return !module->tag && module->start == start && module->end == end && module->path_size == path_size &&
           !memcmp(module->path, path, path_size);
}

/* The address range an object's PT_LOAD segments cover; empty when none. */
static void load_range(const struct dl_phdr_info *info, uintptr_t *start, uintptr_t *end)
{
    *start = UINTPTR_MAX;
    *end = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type != PT_LOAD)
            continue;
        uintptr_t segment_start = info->dlpi_addr + header->p_vaddr;
        if (segment_start < *start)
            *start = segment_start;
        if (segment_start + header->p_memsz > *end)
            *end = segment_start + header->p_memsz;
    }
}

static int remember_one(struct dl_phdr_info *info, size_t size, void *context)
{
    (void)size;
    const char *path = path_of(info, context);
    uintptr_t start, end;
    load_range(info, &start, &end);
    if (start >= end)
        return 0;
    spin_lock(&remembered_lock);
    bool known = false;
    for (struct module *seen = remembered; seen && !known; seen = seen->next)
        known = same_range_and_path(seen, start, end, path);
    struct module *module = known ? NULL : arena_alloc(module_size(path));
    if (module && describe(info, path, module)) {
        module->next = remembered;
        remembered = module;
    }
    spin_unlock(&remembered_lock);
    return 0;
}

void modules_note_loaded(const char *executable)
{
    dl_iterate_phdr(remember_one, (void *)executable);
}

atomic_uint modules_watched;
/* The last tag given, and the executable's name for the loader's nameless
 * entry; under remembered_lock. */
static unsigned last_tag;
static const char *watched_executable = "";
/* Set while a retag runs: a walk that meets a watched place waits for it. */
static atomic_bool retagging;

struct presence {
    const char *executable;
    const struct module *module;
    bool present;
};

static int find_present(struct dl_phdr_info *info, size_t size, void *context)
{
    (void)size;
    struct presence *presence = context;
    uintptr_t start, end;
    load_range(info, &start, &end);
    if (same_range_and_path(presence->module, start, end, path_of(info, presence->executable)))
        presence->present = true;
    return presence->present;
}

void modules_note_unloaded(const char *executable)
{
    spin_lock(&remembered_lock);
    watched_executable = executable;
    unsigned watched = 0;
    for (struct module *module = remembered; module; module = module->next) {
        if (!module->tag && !module->watched) {
            struct presence presence = {executable, module, false};
            dl_iterate_phdr(find_present, &presence);
            module->watched = !presence.present;
        }
        watched += module->watched;
    }
    atomic_store(&modules_watched, watched);
    spin_unlock(&remembered_lock);
}

/* The object that holds address now, as a module without its path. */
struct occupant {
    uintptr_t address;
    const char *executable;
    const struct module *gone;
    bool found, same;
};

static int find_occupant(struct dl_phdr_info *info, size_t size, void *context)
{
    (void)size;
    struct occupant *occupant = context;
    uintptr_t start, end;
    load_range(info, &start, &end);
    if (occupant->address < start || occupant->address >= end)
        return 0;
    occupant->found = true;
    struct module probe = {0};
    for (int i = 0; i < info->dlpi_phnum && !probe.build_id_size; i++)
        if (info->dlpi_phdr[i].p_type == PT_NOTE)
            read_build_id(info, &info->dlpi_phdr[i], &probe);
    /* The same file loaded at the same place: its addresses mean the same. */
    occupant->same = same_range_and_path(occupant->gone, start, end, path_of(info, occupant->executable)) &&
                     probe.build_id_size == occupant->gone->build_id_size &&
                     !memcmp(probe.build_id, occupant->gone->build_id, probe.build_id_size);
    return 1;
}

void modules_reused(uintptr_t address)
{
    while (atomic_load(&retagging))
        sched_yield();
    spin_lock(&remembered_lock);
    struct module *gone = remembered;
    while (gone && !(gone->watched && address >= gone->start && address < gone->end))
        gone = gone->next;
    if (!gone) {
        spin_unlock(&remembered_lock);
        return;
    }
    struct occupant occupant = {address, watched_executable, gone, false, false};
    dl_iterate_phdr(find_occupant, &occupant);
    unsigned tag = 0;
    if (occupant.found) {
        gone->watched = false;
        atomic_fetch_sub(&modules_watched, 1);
        if (!occupant.same && last_tag < RETAG_MAX) {
            tag = ++last_tag;
            atomic_store(&retagging, true);
        }
    }
    spin_unlock(&remembered_lock);
    if (tag) {
        retag_range(gone->start, gone->end, tag);
        spin_lock(&remembered_lock);
        gone->tag = (uint16_t)tag;
        spin_unlock(&remembered_lock);
        atomic_store(&retagging, false);
    }
}

static void *current_alloc(size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (current_region_used + size > current_region_size)
        return NULL;
    void *object = (char *)current_region + current_region_used;
    current_region_used += size;
    return object;
}

struct listing {
    const char *executable;
    struct module **tail;
    size_t needed; /* bytes the loaded objects need, found by the first pass */
};

static int measure_one(struct dl_phdr_info *info, size_t size, void *context)
{
    (void)size;
    struct listing *listing = context;
    listing->needed += (module_size(path_of(info, listing->executable)) + 15) & ~(size_t)15;
    return 0;
}

/* Sets listing->needed when an object did not fit. */
static int list_one(struct dl_phdr_info *info, size_t size, void *context)
{
    (void)size;
    struct listing *listing = context;
    const char *path = path_of(info, listing->executable);
    struct module *module = current_alloc(module_size(path));
    if (!module)
        listing->needed = 1;
    else if (describe(info, path, module)) {
        *listing->tail = module;
        listing->tail = &module->next;
    }
    return 0;
}

struct module *modules_current(const char *executable, bool bounded)
{
    modules_release_current();
    /* Measured first, then listed: no limit on how many objects or how
     * long their names.  An object loaded in between gets the slack, or
     * the whole list is made again. */
    struct listing listing = {executable, &current, 0};
    for (unsigned attempt = 0; attempt < 4; attempt++) {
        listing.needed = 0;
        dl_iterate_phdr(measure_one, &listing);
        size_t remembered_size = 0;
        if (spin_lock_within(&remembered_lock, bounded)) {
            for (struct module *gone = remembered; gone; gone = gone->next)
                remembered_size += (sizeof(*gone) + gone->path_size + 1 + 15) & ~(size_t)15;
            spin_unlock(&remembered_lock);
        }
        current_region_size = (listing.needed + remembered_size) * (attempt + 2) + 4096;
        current_region = region_map(current_region_size);
        if (!current_region)
            return NULL;
        current = NULL;
        listing.tail = &current;
        listing.needed = 0;
        dl_iterate_phdr(list_one, &listing);
        if (!listing.needed)
            break;
        modules_release_current();
    }
    if (!spin_lock_within(&remembered_lock, bounded))
        return current;
    for (struct module *gone = remembered; gone; gone = gone->next) {
        bool loaded = false;
        for (struct module *module = current; module && !loaded && !gone->tag; module = module->next)
            loaded = same_module(module, gone);
        if (loaded)
            continue;
        struct module *copy = current_alloc(sizeof(*copy) + gone->path_size + 1);
        if (!copy)
            break;
        memcpy(copy, gone, sizeof(*copy) + gone->path_size);
        copy->unloaded = true;
        copy->next = NULL;
        uintptr_t tag_bits = (uintptr_t)gone->tag << RETAG_SHIFT;
        copy->bias += tag_bits;
        copy->start += tag_bits;
        copy->end += tag_bits;
        *listing.tail = copy;
        listing.tail = &copy->next;
    }
    spin_unlock(&remembered_lock);
    return current;
}

void modules_release_current(void)
{
    region_unmap(current_region, current_region_size);
    current = NULL;
    current_region = NULL;
    current_region_size = current_region_used = 0;
}

void modules_fork_prepare(void)
{
    spin_lock(&remembered_lock);
}

void modules_fork_parent(void)
{
    spin_unlock(&remembered_lock);
}

void modules_fork_child(void)
{
    spin_reset(&remembered_lock);
}
