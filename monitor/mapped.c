/* The memory a program maps itself: anonymous mmap, munmap, mremap, and
 * brk and sbrk.  Each region is counted as a block, under its call path
 * and a frame of its kind, [mmap] or [brk] (format.h), so that it is in
 * every table; the regions are kept here in address order, with their
 * paths, since munmap may take any part of one or several.  They are not
 * in the pointer map: a region is no block of the allocator's, so no pool
 * can take one for its backing, and no free() can free one.  glibc's own
 * mappings for its large blocks, and its heap's brk, go through its
 * internal calls, not these: they are counted once, as the blocks they
 * hold.  The monitor's own memory is mapped with the system calls
 * themselves (arena.h).
 *
 * The regions follow the kernel's view whatever order threads and signal
 * handlers call in: each call is made, and the regions changed, under one
 * lock with every signal blocked, so that no other thread's call and no
 * handler's comes between the kernel's change and the regions'.  Nothing
 * else is done under the lock (no other lock, no allocation, no walk), so a
 * handler that interrupted the monitor elsewhere can take it: its calls
 * change the regions too, and their figures wait until the monitor returns
 * (monitor_defer_cuts). */
#include "mapped.h"

#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arena.h"
#include "compiler.h"
#include "format.h"
#include "lock.h"
#include "monitor.h"
#include "paths.h"
#include "real.h"
#include "timeline.h"

struct region {
    uintptr_t start, end;
    uint32_t record; /* its path; PATH_NONE: mapped while it could not be counted */
};

/* Room kept for this many more regions before a call takes the lock: a
 * handler's call, which cannot allocate, finds it there. */
#define SPARE_REGIONS 64u
/* A call's cuts are kept on the stack up to this many regions. */
#define CUTS_ON_STACK 16u

/* The regions, in address order, none overlapping; the summed bytes of
 * those counted.  Everything is guarded by lock, which is held only with
 * every signal blocked and never while another lock is taken. */
static struct {
    spinlock_t lock;
    struct region *regions;
    size_t count, capacity;
    sigset_t fork_mask; /* the forking thread's signal mask, from fork's prepare to its parent or child */
} mapped = {.lock = SPINLOCK_INIT};

/* The loaded ranges of the allocators whose mappings are not counted, and
 * of the monitor's own libraries (libunwind), whose mappings are the
 * monitor's; written while the monitor starts, read-only after. */
#define ALLOCATOR_MODULES 2
struct range {
    uintptr_t start, end;
};
static struct range allocator_modules[ALLOCATOR_MODULES];
static struct range monitor_library;

struct module_search {
    uintptr_t address;
    struct range range;
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
    search->range = (struct range){low, high};
    return 1;
}

void mapped_monitor_library(const void *function)
{
    struct module_search search = {(uintptr_t)function, {0, 0}};
    if (function && dl_iterate_phdr(module_range, &search))
        monitor_library = search.range;
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

/* The bytes of the regions counted; changed under mapped.lock, read by anyone. */
static atomic_uint_least64_t live_bytes;

uint64_t mapped_live_bytes(void)
{
    return atomic_load_explicit(&live_bytes, memory_order_relaxed);
}

/* How a call is handled. */
enum handling {
    STRAIGHT, /* to the system alone: the monitor not started or off, or an allocator's call */
    OWN,      /* the monitor's own library's: its memory, from the monitor's reservation */
    REGIONS,  /* the regions changed, the figures left to the monitor's return: the
               * monitor is busy on this thread (a handler interrupted it, or its own
               * libraries called) */
    COUNTED,  /* the regions changed and the figures counted */
};

static inline enum handling handling(uintptr_t caller)
{
    if (from_allocator(caller))
        return STRAIGHT;
    if (caller >= monitor_library.start && caller < monitor_library.end)
        return OWN;
    int status = atomic_load_explicit(&monitor_status, memory_order_acquire);
    if (unlikely(status == MONITOR_UNINITIALISED)) {
        monitor_init();
        status = atomic_load(&monitor_status);
    }
    if (status != MONITOR_ACTIVE)
        return STRAIGHT;
    return monitor_tls.busy ? REGIONS : COUNTED;
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

/* How many regions [start, end) overlaps; the lock held. */
static size_t overlapped(uintptr_t start, uintptr_t end)
{
    if (start >= end)
        return 0;
    size_t first = first_after(start), count = 0;
    while (first + count < mapped.count && mapped.regions[first + count].start < end)
        count++;
    return count;
}

static inline bool counted_region(const struct region *region)
{
    return region->record != PATH_NONE;
}

/* What a call cut: the regions it took some of, for the figures. */
struct cuts {
    struct mapping_cut *cut;
    size_t count, room;
    bool lost; /* more than room: some regions' figures are lost */
};

/* Takes [start, end) out of every region it overlaps, noting each in
 * cuts; the lock held.  A region cut in its middle leaves two: where there
 * is no room for the second (a handler's call), the part above the cut is
 * forgotten too, its figures freed with the rest. */
static void forget_range(uintptr_t start, uintptr_t end, struct cuts *cuts)
{
    if (start >= end)
        return;
    size_t at = first_after(start);
    while (at < mapped.count && mapped.regions[at].start < end) {
        struct region region = mapped.regions[at];
        uintptr_t cut_start = region.start > start ? region.start : start;
        uintptr_t cut_end = region.end < end ? region.end : end;
        struct region left[2] = {{region.start, cut_start, region.record}, {cut_end, region.end, region.record}};
        bool kept[2] = {left[0].start < left[0].end, left[1].start < left[1].end};
        if (kept[0] && kept[1] && mapped.count == mapped.capacity)
            kept[1] = false;
        uint64_t gone = (region.end - region.start) - (kept[0] ? left[0].end - left[0].start : 0) -
                        (kept[1] ? left[1].end - left[1].start : 0);
        if (counted_region(&region)) {
            atomic_fetch_sub_explicit(&live_bytes, gone, memory_order_relaxed);
            if (cuts->count < cuts->room)
                cuts->cut[cuts->count++] = (struct mapping_cut){
                    region.record, MPROF_SUM_FIELD_COUNT, region.end - region.start,
                    {kept[0] ? left[0].end - left[0].start : 0, kept[1] ? left[1].end - left[1].start : 0}};
            else
                cuts->lost = true;
        }
        if (kept[0] && kept[1]) {
            memmove(&mapped.regions[at + 2], &mapped.regions[at + 1], (mapped.count - at - 1) * sizeof(struct region));
            mapped.regions[at] = left[0];
            mapped.regions[at + 1] = left[1];
            mapped.count++;
            at += 2;
        } else if (kept[0] || kept[1]) {
            mapped.regions[at] = kept[0] ? left[0] : left[1];
            at++;
        } else {
            memmove(&mapped.regions[at], &mapped.regions[at + 1], (mapped.count - at - 1) * sizeof(struct region));
            mapped.count--;
        }
    }
}

/* Puts [start, end) in the regions, under record; the lock held, and the
 * range forgotten.  Without room (a handler's call), a counted region
 * cannot be kept, and is not counted. */
static bool add_region(uintptr_t start, uintptr_t end, uint32_t record)
{
    if (start >= end || mapped.count == mapped.capacity)
        return false;
    size_t at = first_after(start);
    memmove(&mapped.regions[at + 1], &mapped.regions[at], (mapped.count - at) * sizeof(struct region));
    mapped.regions[at] = (struct region){start, end, record};
    mapped.count++;
    if (record != PATH_NONE)
        atomic_fetch_add_explicit(&live_bytes, end - start, memory_order_relaxed);
    return true;
}

/* The monitor's memory for the regions and a call's cuts, taken and given
 * back with the guard up: a handler that interrupts the arena's lock
 * holder and allocates must not wait for it. */
static void *own_memory(size_t size)
{
    monitor_tls.busy++;
    void *memory = region_map(size);
    monitor_tls.busy--;
    return memory;
}

static void own_memory_back(void *memory, size_t size)
{
    monitor_tls.busy++;
    region_unmap(memory, size);
    monitor_tls.busy--;
}

/* Room for SPARE_REGIONS more regions, made before the lock is taken:
 * the new array is filled under the lock.  Only out of a handler's call. */
static void make_room(void)
{
    size_t capacity = __atomic_load_n(&mapped.capacity, __ATOMIC_RELAXED);
    size_t count = __atomic_load_n(&mapped.count, __ATOMIC_RELAXED);
    if (count + SPARE_REGIONS <= capacity)
        return;
    size_t wanted = capacity ? capacity * 2 : 256;
    while (wanted < count + 2 * SPARE_REGIONS)
        wanted *= 2;
    struct region *grown = own_memory(wanted * sizeof(struct region));
    if (!grown)
        return;
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    spin_lock(&mapped.lock);
    struct region *old = NULL;
    size_t old_capacity = 0;
    if (mapped.capacity < wanted) {
        if (mapped.count)
            memcpy(grown, mapped.regions, mapped.count * sizeof(struct region));
        old = mapped.regions;
        old_capacity = mapped.capacity;
        mapped.regions = grown;
        mapped.capacity = wanted;
        grown = NULL;
    }
    spin_unlock(&mapped.lock);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    own_memory_back(grown, wanted * sizeof(struct region));
    own_memory_back(old, old_capacity * sizeof(struct region));
}

/* One call of the family, as the kernel and the regions see it. */
struct call {
    enum handling handling;
    /* What the call unmaps (or maps over) once it succeeded: up to two
     * ranges, set by run() from the result. */
    uintptr_t forget[2][2];
    /* The region it maps, once it succeeded: [start, end) under record;
     * adding false when none. */
    bool adding;
    uintptr_t add_start, add_end;
    uint32_t record;
    struct cuts cuts;
    struct mapping_cut on_stack[CUTS_ON_STACK];
};

/* The kernel's part of a call, made under the lock; it fills the call's
 * ranges from its result, and says whether it succeeded. */
typedef bool (*kernel_part)(struct call *call, void *arguments);

/* Makes the call with the lock held and every signal blocked, then changes
 * the regions as it did; the cuts in call->cuts.  The cuts' room is made
 * before, out of a handler, for the regions in [low, high) and one more (a
 * region across mremap's two ranges is cut twice), counted again after. */
static bool run(struct call *call, kernel_part part, void *arguments, uintptr_t low, uintptr_t high)
{
    call->cuts = (struct cuts){call->on_stack, 0, CUTS_ON_STACK, false};
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    spin_lock(&mapped.lock);
    size_t needed = overlapped(low, high) + 1;
    while (call->handling == COUNTED && needed > call->cuts.room) {
        spin_unlock(&mapped.lock);
        pthread_sigmask(SIG_SETMASK, &previous, NULL);
        if (call->cuts.cut != call->on_stack)
            own_memory_back(call->cuts.cut, call->cuts.room * sizeof(struct mapping_cut));
        size_t room = needed * 2;
        struct mapping_cut *cut = own_memory(room * sizeof(struct mapping_cut));
        call->cuts = cut ? (struct cuts){cut, 0, room, false} : (struct cuts){call->on_stack, 0, CUTS_ON_STACK, false};
        pthread_sigmask(SIG_BLOCK, &all, &previous);
        spin_lock(&mapped.lock);
        needed = cut ? overlapped(low, high) + 1 : 0;
    }
    bool done = part(call, arguments);
    if (done) {
        for (unsigned i = 0; i < 2; i++)
            forget_range(call->forget[i][0], call->forget[i][1], &call->cuts);
        if (call->adding && !add_region(call->add_start, call->add_end, call->record))
            call->record = PATH_NONE;
    }
    spin_unlock(&mapped.lock);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    return done;
}

/* The figures of a call that succeeded: counted now, or, in a handler's
 * call, its cuts when the monitor returns. */
static void count_call(struct call *call, enum mprof_summary_field field, uint64_t mapped_length)
{
    /* A region mapped while the monitor was busy is not counted, and not
     * told apart: a handler's, or a library's the monitor called. */
    if (call->cuts.lost)
        monitor_count_untracked();
    if (call->handling == REGIONS) {
        monitor_defer_cuts(field, call->cuts.cut, call->cuts.count);
    } else {
        uint32_t record = call->adding ? call->record : PATH_NONE;
        monitor_mapping_done(field, record, mapped_length, call->cuts.cut, call->cuts.count);
        if (record != PATH_NONE || call->cuts.count)
            timeline_tick();
    }
    if (call->cuts.cut != call->on_stack)
        own_memory_back(call->cuts.cut, call->cuts.room * sizeof(struct mapping_cut));
}

/* A new call: its path walked now, before the lock, when it may map a
 * region (walk) and the monitor is not busy. */
MONITOR_TEXT static void start_call(struct call *call, enum handling how, bool walk, uintptr_t frame)
{
    memset(call->forget, 0, sizeof call->forget);
    call->handling = how;
    call->adding = false;
    call->add_start = call->add_end = 0;
    call->record = how == COUNTED && walk ? monitor_mapping_path(frame) : PATH_NONE;
    if (how == COUNTED)
        make_room();
}

static size_t page_rounded(size_t length)
{
    size_t page = (size_t)getpagesize();
    return length > SIZE_MAX - page ? length : (length + page - 1) / page * page;
}

struct map_arguments {
    void *address;
    size_t length;
    int protection, flags, fd;
    off_t offset;
    void *result;
};

static void *system_map(struct map_arguments *a)
{
    return real.mmap ? real.mmap(a->address, a->length, a->protection, a->flags, a->fd, a->offset)
                     : system_mmap(a->address, a->length, a->protection, a->flags, a->fd, a->offset);
}

static bool map_part(struct call *call, void *arguments)
{
    struct map_arguments *a = arguments;
    a->result = system_map(a);
    if (a->result == MAP_FAILED)
        return false;
    uintptr_t start = (uintptr_t)a->result, end = start + page_rounded(a->length);
    /* Whatever was there is gone: a fixed mapping replaces it. */
    call->forget[0][0] = start;
    call->forget[0][1] = end;
    if (a->flags & MAP_ANONYMOUS) {
        call->adding = true;
        call->add_start = start;
        call->add_end = end;
    }
    return true;
}

MONITOR_TEXT static void *map(void *address, size_t length, int protection, int flags, int fd, off_t offset,
                              uintptr_t caller)
{
    struct map_arguments arguments = {address, length, protection, flags, fd, offset, MAP_FAILED};
    enum handling how = handling(caller);
    if (how == OWN && !(flags & (MAP_FIXED | MAP_FIXED_NOREPLACE | MAP_SHARED))) {
        void *region = region_map_as(length, protection, flags & MAP_ANONYMOUS ? -1 : fd, offset);
        if (region)
            return region;
        errno = ENOMEM;
        return MAP_FAILED;
    }
    /* A file's mapping where the kernel chooses replaces nothing. */
    if (how == STRAIGHT || how == OWN || !(flags & (MAP_ANONYMOUS | MAP_FIXED)))
        return system_map(&arguments);
    struct call call;
    start_call(&call, how, flags & MAP_ANONYMOUS, MPROF_MMAP_FRAME);
    uintptr_t low = flags & MAP_FIXED ? (uintptr_t)address : 0;
    if (!run(&call, map_part, &arguments, low, low ? low + page_rounded(length) : 0))
        return arguments.result;
    count_call(&call, flags & MAP_ANONYMOUS ? MPROF_SUM_MMAP_CALLS : MPROF_SUM_MUNMAP_CALLS,
               call.add_end - call.add_start);
    return arguments.result;
}

EXPORT MONITOR_TEXT void *mmap(void *address, size_t length, int protection, int flags, int fd, off_t offset)
{
    return map(address, length, protection, flags, fd, offset, (uintptr_t)__builtin_return_address(0));
}

EXPORT MONITOR_TEXT void *mmap64(void *address, size_t length, int protection, int flags, int fd, off_t offset)
{
    return map(address, length, protection, flags, fd, offset, (uintptr_t)__builtin_return_address(0));
}

struct unmap_arguments {
    void *address;
    size_t length;
    int result;
};

static int system_unmap(void *address, size_t length)
{
    return real.munmap ? real.munmap(address, length) : system_munmap(address, length);
}

static bool unmap_part(struct call *call, void *arguments)
{
    struct unmap_arguments *a = arguments;
    a->result = system_unmap(a->address, a->length);
    if (a->result != 0)
        return false;
    call->forget[0][0] = (uintptr_t)a->address;
    call->forget[0][1] = (uintptr_t)a->address + page_rounded(a->length);
    return true;
}

EXPORT MONITOR_TEXT int munmap(void *address, size_t length)
{
    enum handling how = handling((uintptr_t)__builtin_return_address(0));
    if (how == OWN && region_reserved(address, length)) {
        region_unmap(address, length);
        return 0;
    }
    if (how == STRAIGHT || how == OWN)
        return system_unmap(address, length);
    struct unmap_arguments arguments = {address, length, -1};
    struct call call;
    start_call(&call, how, false, 0);
    uintptr_t low = (uintptr_t)address;
    if (run(&call, unmap_part, &arguments, low, low + page_rounded(length)) && call.cuts.count)
        count_call(&call, MPROF_SUM_MUNMAP_CALLS, 0);
    return arguments.result;
}

struct remap_arguments {
    void *old;
    size_t old_length, new_length;
    int flags;
    void *wanted;
    void *result;
};

/* Whether [start, end) holds some of a region; the lock held. */
static bool holds_region(uintptr_t start, uintptr_t end)
{
    return overlapped(start, end) != 0;
}

static bool remap_part(struct call *call, void *arguments)
{
    struct remap_arguments *a = arguments;
    uintptr_t old = (uintptr_t)a->old;
    /* A region moves with its memory; a file's mapping stays uncounted. */
    bool region = holds_region(old, old + page_rounded(a->old_length));
    a->result = real.mremap ? real.mremap(a->old, a->old_length, a->new_length, a->flags, a->wanted)
                            : system_mremap(a->old, a->old_length, a->new_length, a->flags, a->wanted);
    if (a->result == MAP_FAILED)
        return false;
    uintptr_t start = (uintptr_t)a->result, end = start + page_rounded(a->new_length);
    /* The old range is unmapped (but with MREMAP_DONTUNMAP, which leaves
     * it mapped, empty), and whatever was at the new one replaced. */
    if (!(a->flags & MREMAP_DONTUNMAP)) {
        call->forget[0][0] = old;
        call->forget[0][1] = old + page_rounded(a->old_length);
    }
    call->forget[1][0] = start;
    call->forget[1][1] = end;
    if (region) {
        call->adding = true;
        call->add_start = start;
        call->add_end = end;
    }
    return true;
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
    struct remap_arguments arguments = {old, old_length, new_length, flags, wanted, MAP_FAILED};
    enum handling how = handling((uintptr_t)__builtin_return_address(0));
    if (how == STRAIGHT || how == OWN)
        return real.mremap ? real.mremap(old, old_length, new_length, flags, wanted)
                           : system_mremap(old, old_length, new_length, flags, wanted);
    /* The path is walked only for a region, as far as can be told before
     * the call: a file's mapping makes none. */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    spin_lock(&mapped.lock);
    bool region = holds_region((uintptr_t)old, (uintptr_t)old + page_rounded(old_length));
    spin_unlock(&mapped.lock);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    struct call call;
    start_call(&call, how, region, MPROF_MMAP_FRAME);
    /* The cuts' room: the old range, and the one it moves to, as one span. */
    uintptr_t low = (uintptr_t)old, high = low + page_rounded(old_length);
    if (flags & MREMAP_FIXED) {
        low = low < (uintptr_t)wanted ? low : (uintptr_t)wanted;
        uintptr_t target = (uintptr_t)wanted + page_rounded(new_length);
        high = high > target ? high : target;
    }
    if (!run(&call, remap_part, &arguments, low, high))
        return arguments.result;
    if (call.adding || call.cuts.count)
        count_call(&call, MPROF_SUM_MREMAP_CALLS, call.add_end - call.add_start);
    return arguments.result;
}

struct break_arguments {
    bool absolute;    /* brk(address), else sbrk(increment) */
    void *address;    /* brk's */
    intptr_t increment; /* sbrk's */
    void *result;
};

static bool break_part(struct call *call, void *arguments)
{
    struct break_arguments *a = arguments;
    char *old = real.sbrk(0), *new;
    if (a->absolute) {
        int result = real.brk(a->address);
        a->result = (void *)(intptr_t)result;
        if (result != 0)
            return false;
        new = a->address;
    } else {
        a->result = real.sbrk(a->increment);
        if (a->result == (void *)-1)
            return false;
        old = a->result;
        new = old + a->increment;
    }
    if (new > old) {
        call->forget[0][0] = (uintptr_t)old;
        call->forget[0][1] = (uintptr_t)new;
        call->adding = true;
        call->add_start = (uintptr_t)old;
        call->add_end = (uintptr_t)new;
    } else {
        call->forget[0][0] = (uintptr_t)new;
        call->forget[0][1] = (uintptr_t)old;
    }
    return true;
}

/* brk and sbrk: the break moved up is a region, moved down unmaps. */
MONITOR_TEXT static void *move_break(struct break_arguments *arguments, uintptr_t caller)
{
    enum handling how = handling(caller);
    if (!real.sbrk || !real.brk) {
        errno = ENOMEM;
        return (void *)-1;
    }
    if (how == STRAIGHT || how == OWN)
        return arguments->absolute ? (void *)(intptr_t)real.brk(arguments->address) : real.sbrk(arguments->increment);
    /* The direction, as far as can be told before the call: a walk only
     * for a break moved up. */
    bool up = arguments->absolute ? (char *)arguments->address > (char *)real.sbrk(0) : arguments->increment > 0;
    struct call call;
    start_call(&call, how, up, MPROF_BRK_FRAME);
    uintptr_t now = (uintptr_t)real.sbrk(0);
    uintptr_t target = arguments->absolute ? (uintptr_t)arguments->address : now + (uintptr_t)arguments->increment;
    if (run(&call, break_part, arguments, now < target ? now : target, now < target ? target : now) &&
        (call.adding ? call.add_start < call.add_end : call.cuts.count != 0))
        count_call(&call, MPROF_SUM_BRK_CALLS, call.add_end - call.add_start);
    return arguments->result;
}

EXPORT MONITOR_TEXT void *sbrk(intptr_t increment)
{
    struct break_arguments arguments = {false, NULL, increment, (void *)-1};
    if (increment == 0 && real.sbrk)
        return real.sbrk(0);
    return move_break(&arguments, (uintptr_t)__builtin_return_address(0));
}

EXPORT MONITOR_TEXT int brk(void *address)
{
    struct break_arguments arguments = {true, address, 0, (void *)-1};
    return (int)(intptr_t)move_break(&arguments, (uintptr_t)__builtin_return_address(0));
}

/* A limit of the address space counts the monitor's reserved address
 * space too: what it does not use is given back before the program sets
 * one (setrlimit, prlimit of RLIMIT_AS), or the program, already past the
 * limit, could map nothing more.  The limit itself is set with the system
 * call, as glibc sets it. */
static void before_limit(int resource, const struct rlimit *limit)
{
    if (resource == RLIMIT_AS && limit && limit->rlim_cur != RLIM_INFINITY &&
        atomic_load_explicit(&monitor_status, memory_order_acquire) != MONITOR_UNINITIALISED)
        region_release_unused();
}

EXPORT int setrlimit(__rlimit_resource_t resource, const struct rlimit *limit)
{
    before_limit((int)resource, limit);
    return (int)syscall(SYS_prlimit64, 0, resource, limit, NULL);
}

EXPORT int setrlimit64(__rlimit_resource_t resource, const struct rlimit64 *limit)
{
    return setrlimit(resource, (const struct rlimit *)limit);
}

EXPORT int prlimit(pid_t pid, __rlimit_resource_t resource, const struct rlimit *limit, struct rlimit *old)
{
    if (pid == 0 || pid == getpid())
        before_limit((int)resource, limit);
    return (int)syscall(SYS_prlimit64, pid, resource, limit, old);
}

EXPORT int prlimit64(pid_t pid, __rlimit_resource_t resource, const struct rlimit64 *limit, struct rlimit64 *old)
{
    return prlimit(pid, resource, (const struct rlimit *)limit, (struct rlimit *)old);
}

void mapped_each_region(bool locking, void (*visit)(void *context, uintptr_t start, uintptr_t end), void *context)
{
    sigset_t all, previous;
    if (locking) {
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &previous);
        spin_lock(&mapped.lock);
    }
    for (size_t i = 0; i < mapped.count; i++)
        visit(context, mapped.regions[i].start, mapped.regions[i].end);
    if (locking) {
        spin_unlock(&mapped.lock);
        pthread_sigmask(SIG_SETMASK, &previous, NULL);
    }
}

/* fork's handlers run on one thread: the mask it had is put back in the
 * parent and the child; until then no handler of it can call in and wait
 * for the lock it holds. */
void mapped_fork_prepare(void)
{
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    spin_lock(&mapped.lock);
    mapped.fork_mask = previous;
}

void mapped_fork_parent(void)
{
    sigset_t previous = mapped.fork_mask;
    spin_unlock(&mapped.lock);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
}

void mapped_fork_child(void)
{
    sigset_t previous = mapped.fork_mask;
    spin_reset(&mapped.lock);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
}
