/* The memory a program maps itself: anonymous mmap, munmap, mremap, and
 * brk and sbrk.  Each region is counted as a block, under its call path
 * and a frame of its kind, [mmap] or [brk] (format.h), so that it is in
 * every table; the regions are kept here in address order as well, since
 * munmap may take any part of one or several.  glibc's own mappings for
 * its large blocks, and its heap's brk, go through its internal calls,
 * not these: they are counted once, as the blocks they hold.  The
 * monitor's own memory is mapped with the system calls themselves
 * (arena.h). */
#include "mapped.h"

#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena.h"
#include "compiler.h"
#include "format.h"
#include "lock.h"
#include "monitor.h"
#include "real.h"
#include "timeline.h"

struct region {
    uintptr_t start, end;
};

/* The regions counted, in address order, none overlapping.  Everything is
 * guarded by lock, taken before any thread state's. */
static struct {
    spinlock_t lock;
    struct region *regions;
    size_t count, capacity;
} mapped = {.lock = SPINLOCK_INIT};

/* The loaded ranges of the allocators whose mappings are not counted;
 * written while the monitor starts, read-only after. */
#define ALLOCATOR_MODULES 2
static struct region allocator_modules[ALLOCATOR_MODULES];

struct module_search {
    uintptr_t address;
    struct region range;
};

static int module_range(struct dl_phdr_info *module, size_t size, void *data)
{
    (void)size;
    struct module_search *search = data;
    uintptr_t low = UINTPTR_MAX, high = 0;
    for (ElfW(Half) i = 0; i < module->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &module->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD)
            continue;
        uintptr_t start = module->dlpi_addr + segment->p_vaddr;
        low = start < low ? start : low;
        high = start + segment->p_memsz > high ? start + segment->p_memsz : high;
    }
    if (search->address < low || search->address >= high)
        return 0;
    search->range = (struct region){low, high};
    return 1;
}

void mapped_allocator_module(const void *function)
{
    struct module_search search = {(uintptr_t)function, {0, 0}};
    if (!function || !dl_iterate_phdr(module_range, &search))
        return;
    for (unsigned i = 0; i < ALLOCATOR_MODULES; i++) {
        if (!allocator_modules[i].end || allocator_modules[i].start == search.range.start) {
            allocator_modules[i] = search.range;
            return;
        }
    }
}

/* Whether the call came from an allocator's own code. */
static inline bool from_allocator(uintptr_t caller)
{
    for (unsigned i = 0; i < ALLOCATOR_MODULES && allocator_modules[i].end; i++)
        if (caller >= allocator_modules[i].start && caller < allocator_modules[i].end)
            return true;
    return false;
}

/* The bytes of the regions; changed under mapped.lock, read by anyone. */
static atomic_uint_least64_t live_bytes;

uint64_t mapped_live_bytes(void)
{
    return atomic_load_explicit(&live_bytes, memory_order_relaxed);
}

/* Whether a call from caller is counted: else it goes straight to the
 * system (the monitor not started, off, or busy on this thread: its own
 * libraries' mappings are not the program's, nor an allocator's). */
static inline bool counting(uintptr_t caller)
{
    if (from_allocator(caller))
        return false;
    int status = atomic_load_explicit(&monitor_status, memory_order_acquire);
    if (unlikely(status == MONITOR_UNINITIALISED)) {
        monitor_init();
        status = atomic_load(&monitor_status);
    }
    return status == MONITOR_ACTIVE && !monitor_tls.busy;
}

/* The first region that ends after address. */
static size_t first_after(uintptr_t address)
{
    size_t low = 0, high = mapped.count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (mapped.regions[middle].end <= address)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

/* Takes [start, end) out of every region it overlaps, counting what each
 * loses; the lock held.  Returns the bytes taken. */
MONITOR_TEXT static uint64_t forget_range(uintptr_t start, uintptr_t end)
{
    uint64_t taken = 0;
    size_t at = first_after(start);
    while (at < mapped.count && mapped.regions[at].start < end) {
        struct region region = mapped.regions[at];
        uintptr_t cut_start = region.start > start ? region.start : start;
        uintptr_t cut_end = region.end < end ? region.end : end;
        monitor_unmapped(region.start, region.end, cut_start, cut_end);
        taken += cut_end - cut_start;
        atomic_fetch_sub_explicit(&live_bytes, cut_end - cut_start, memory_order_relaxed);
        struct region left[2] = {{region.start, cut_start}, {cut_end, region.end}};
        size_t kept = (left[0].start < left[0].end) + (left[1].start < left[1].end);
        if (kept == 0) {
            memmove(&mapped.regions[at], &mapped.regions[at + 1], (mapped.count - at - 1) * sizeof(struct region));
            mapped.count--;
            continue;
        }
        if (kept == 1) {
            mapped.regions[at] = left[0].start < left[0].end ? left[0] : left[1];
            at++;
            continue;
        }
        /* Two regions left: only one region can hold the whole cut, and
         * room() made room for it. */
        memmove(&mapped.regions[at + 2], &mapped.regions[at + 1], (mapped.count - at - 1) * sizeof(struct region));
        mapped.regions[at] = left[0];
        mapped.regions[at + 1] = left[1];
        mapped.count++;
        at += 2;
    }
    return taken;
}

/* Room for two more regions: a cut may split one.  False when out of
 * memory. */
static bool room(void)
{
    if (mapped.count + 2 <= mapped.capacity)
        return true;
    size_t capacity = mapped.capacity ? mapped.capacity * 2 : 256;
    size_t old_size = mapped.capacity * sizeof(struct region), new_size = capacity * sizeof(struct region);
    struct region *grown = mapped.regions ? region_grow(mapped.regions, old_size, new_size) : region_map(new_size);
    if (!grown)
        return false;
    mapped.regions = grown;
    mapped.capacity = capacity;
    return true;
}

/* The program mapped [start, start + length) under frame: whatever was
 * counted there before is gone (MAP_FIXED, a new break). */
MONITOR_TEXT static void note_mapped(void *start, size_t length, uintptr_t frame, enum mprof_summary_field field)
{
    uintptr_t low = (uintptr_t)start, high = low + length;
    spin_lock(&mapped.lock);
    if (room()) {
        forget_range(low, high);
        size_t at = first_after(low);
        memmove(&mapped.regions[at + 1], &mapped.regions[at], (mapped.count - at) * sizeof(struct region));
        mapped.regions[at] = (struct region){low, high};
        mapped.count++;
        atomic_fetch_add_explicit(&live_bytes, length, memory_order_relaxed);
        monitor_mapped(start, length, frame, field);
    } else {
        monitor_count_untracked();
    }
    spin_unlock(&mapped.lock);
    timeline_tick();
}

/* [start, end) is unmapped; a call that took some of the regions counts
 * as field (none: MPROF_SUM_FIELD_COUNT), the bytes taken as unmapped. */
MONITOR_TEXT static void note_unmapped(uintptr_t start, uintptr_t end, enum mprof_summary_field field)
{
    spin_lock(&mapped.lock);
    /* No region yet (a file's unmapping): nothing to make room for. */
    uint64_t taken = mapped.count && room() ? forget_range(start, end) : 0;
    spin_unlock(&mapped.lock);
    if (taken) {
        monitor_mapping_call(field, MPROF_SUM_UNMAPPED_BYTES, taken);
        timeline_tick();
    }
}

static size_t page_rounded(size_t length)
{
    size_t page = (size_t)getpagesize();
    return (length + page - 1) / page * page;
}

MONITOR_TEXT static void *map(void *address, size_t length, int protection, int flags, int fd, off_t offset,
                              uintptr_t caller)
{
    void *result = real.mmap ? real.mmap(address, length, protection, flags, fd, offset)
                             : system_mmap(address, length, protection, flags, fd, offset);
    if (result == MAP_FAILED || !counting(caller))
        return result;
    if (flags & MAP_ANONYMOUS)
        note_mapped(result, length, MPROF_MMAP_FRAME, MPROF_SUM_MMAP_CALLS);
    else if (flags & MAP_FIXED) /* a file over a region */
        note_unmapped((uintptr_t)result, (uintptr_t)result + page_rounded(length), MPROF_SUM_MUNMAP_CALLS);
    return result;
}

EXPORT MONITOR_TEXT void *mmap(void *address, size_t length, int protection, int flags, int fd, off_t offset)
{
    return map(address, length, protection, flags, fd, offset, (uintptr_t)__builtin_return_address(0));
}

EXPORT MONITOR_TEXT void *mmap64(void *address, size_t length, int protection, int flags, int fd, off_t offset)
{
    return map(address, length, protection, flags, fd, offset, (uintptr_t)__builtin_return_address(0));
}

EXPORT MONITOR_TEXT int munmap(void *address, size_t length)
{
    int result = real.munmap ? real.munmap(address, length) : system_munmap(address, length);
    if (result == 0 && counting((uintptr_t)__builtin_return_address(0)))
        note_unmapped((uintptr_t)address, (uintptr_t)address + page_rounded(length), MPROF_SUM_MUNMAP_CALLS);
    return result;
}

EXPORT MONITOR_TEXT void *mremap(void *old, size_t old_length, size_t new_length, int flags, ...)
{
    void *wanted = NULL;
    if (flags & MREMAP_FIXED) {
        va_list more;
        va_start(more, flags);
        wanted = va_arg(more, void *);
        va_end(more);
    }
    void *result = real.mremap ? real.mremap(old, old_length, new_length, flags, wanted)
                               : system_mremap(old, old_length, new_length, flags, wanted);
    if (result == MAP_FAILED || !counting((uintptr_t)__builtin_return_address(0)))
        return result;
    /* As realloc: the old region freed, the new one allocated here. */
    note_unmapped((uintptr_t)old, (uintptr_t)old + page_rounded(old_length), MPROF_SUM_FIELD_COUNT);
    note_mapped(result, new_length, MPROF_MMAP_FRAME, MPROF_SUM_MREMAP_CALLS);
    return result;
}

EXPORT MONITOR_TEXT void *sbrk(intptr_t increment)
{
    if (!real.sbrk && atomic_load(&monitor_status) == MONITOR_UNINITIALISED)
        monitor_init();
    if (!real.sbrk) {
        errno = ENOMEM;
        return (void *)-1;
    }
    char *old = real.sbrk(increment);
    if (old == (void *)-1 || increment == 0 || !counting((uintptr_t)__builtin_return_address(0)))
        return old;
    if (increment > 0)
        note_mapped(old, (size_t)increment, MPROF_BRK_FRAME, MPROF_SUM_BRK_CALLS);
    else
        note_unmapped((uintptr_t)old + (uintptr_t)increment, (uintptr_t)old, MPROF_SUM_BRK_CALLS);
    return old;
}

EXPORT MONITOR_TEXT int brk(void *address)
{
    if (!real.brk && atomic_load(&monitor_status) == MONITOR_UNINITIALISED)
        monitor_init();
    if (!real.brk || !real.sbrk) {
        errno = ENOMEM;
        return -1;
    }
    char *old = real.sbrk(0);
    int result = real.brk(address);
    if (result != 0 || !counting((uintptr_t)__builtin_return_address(0)) || (char *)address == old)
        return result;
    if ((char *)address > old)
        note_mapped(old, (size_t)((char *)address - old), MPROF_BRK_FRAME, MPROF_SUM_BRK_CALLS);
    else
        note_unmapped((uintptr_t)address, (uintptr_t)old, MPROF_SUM_BRK_CALLS);
    return result;
}

void mapped_fork_prepare(void)
{
    spin_lock(&mapped.lock);
}

void mapped_fork_parent(void)
{
    spin_unlock(&mapped.lock);
}

void mapped_fork_child(void)
{
    spin_reset(&mapped.lock);
}
