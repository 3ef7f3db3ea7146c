/* The monitor's memory of arena.h: regions mapped, grown and unmapped
 * whole, and a bump arena of small pieces never given back.
 *
 * Every region is carved out of address space the monitor reserved for
 * itself (PROT_NONE, MAP_NORESERVE: no memory, no commit charge), never
 * where the kernel would choose: the kernel chooses the highest hole, and a
 * hole is often one the program just made and still treats as its own.  A
 * program that unmaps two pages of its region and then the whole region
 * (legal: unmapped pages are no error) would otherwise unmap the page the
 * monitor mapped into the hole meanwhile. */
#include "arena.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compiler.h"
#include "lock.h"

#define PAGE_SIZE 4096u
#define ARENA_CHUNK (256u * 1024u)

/* A reservation is tried at this size first and halved, down to what is
 * asked for, when the address space is limited (RLIMIT_AS). */
#define RESERVATION_SIZE ((size_t)64 << 30)
#define RESERVATION_MIN ((size_t)64 << 20)
/* Ranges given back, kept for reuse; past this many the smallest is
 * forgotten (its address space, not memory, is lost). */
#define FREE_RANGES 1024u

/* Bytes currently mapped by the monitor; updated atomically by any thread. */
static atomic_size_t mapped_bytes;

/* The current arena chunk; guarded by arena_lock.  Objects are never freed,
 * so a chunk is abandoned, not released, when it runs out. */
static spinlock_t arena_lock = SPINLOCK_INIT;
static char *arena_next;
static char *arena_end;

/* The reservations, for region_reserved: the first few, which are all a
 * process makes unless the monitor's memory outgrows tens of gigabytes.
 * Guarded by space_lock. */
#define RESERVATIONS_KEPT 8u
static struct address_range reservations[RESERVATIONS_KEPT];
static unsigned reservation_count;

/* The reserved address space not in use: the untouched rest of the last
 * reservation, [top, end), and the ranges given back, in address order,
 * none touching another.  Guarded by space_lock, which is taken after
 * arena_lock and before nothing. */
static spinlock_t space_lock = SPINLOCK_INIT;
static struct {
    uintptr_t top, end;
    struct address_range free[FREE_RANGES];
    unsigned free_count;
} space;

static size_t page_round(size_t size)
{
    return (size + PAGE_SIZE - 1) & ~(size_t)(PAGE_SIZE - 1);
}

void *system_mmap(void *address, size_t length, int protection, int flags, int fd, long offset)
{
    return (void *)syscall(SYS_mmap, address, length, protection, flags, fd, offset);
}

int system_munmap(void *address, size_t length)
{
    return (int)syscall(SYS_munmap, address, length);
}

void *system_mremap(void *old, size_t old_length, size_t new_length, int flags, void *new_address)
{
    return (void *)syscall(SYS_mremap, old, old_length, new_length, flags, new_address);
}

int system_madvise(void *address, size_t length, int advice)
{
    return (int)syscall(SYS_madvise, address, length, advice);
}

/* Puts [start, end) back among the free ranges, joined to its neighbours
 * (or to the untouched rest); the lock held. */
static void give(uintptr_t start, uintptr_t end)
{
    if (end == space.top) {
        space.top = start;
        /* A free range may now touch the untouched rest. */
        for (unsigned i = 0; i < space.free_count; i++) {
            if (space.free[i].end == space.top) {
                space.top = space.free[i].start;
                memmove(&space.free[i], &space.free[i + 1], (space.free_count - i - 1) * sizeof space.free[0]);
                space.free_count--;
                break;
            }
        }
        return;
    }
    unsigned at = 0;
    while (at < space.free_count && space.free[at].end < start)
        at++;
    bool after = at < space.free_count && space.free[at].end == start;
    if (after) {
        space.free[at].end = end;
        if (at + 1 < space.free_count && space.free[at + 1].start == end) {
            space.free[at].end = space.free[at + 1].end;
            memmove(&space.free[at + 1], &space.free[at + 2], (space.free_count - at - 2) * sizeof space.free[0]);
            space.free_count--;
        }
        return;
    }
    if (at < space.free_count && space.free[at].start == end) {
        space.free[at].start = start;
        return;
    }
    if (space.free_count == FREE_RANGES) {
        unsigned smallest = 0;
        for (unsigned i = 1; i < space.free_count; i++)
            if (space.free[i].end - space.free[i].start < space.free[smallest].end - space.free[smallest].start)
                smallest = i;
        if (space.free[smallest].end - space.free[smallest].start >= end - start)
            return;
        memmove(&space.free[smallest], &space.free[smallest + 1],
                (space.free_count - smallest - 1) * sizeof space.free[0]);
        space.free_count--;
        if (smallest < at)
            at--;
    }
    memmove(&space.free[at + 1], &space.free[at], (space.free_count - at) * sizeof space.free[0]);
    space.free[at] = (struct address_range){start, end};
    space.free_count++;
}

/* A new reservation of at least size bytes, whose untouched part replaces
 * the last one's (given back); the lock held.  False when the kernel has
 * no room for one.  Under a limit of the address space (RLIMIT_AS) it
 * takes a sixteenth of the limit at most: the program's room is the
 * limit less the reservation. */
static bool reserve(size_t size)
{
    size_t most = RESERVATION_SIZE;
    struct rlimit limit;
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur / 16 < most)
        most = page_round((size_t)(limit.rlim_cur / 16));
    size_t least = size > RESERVATION_MIN ? size : RESERVATION_MIN;
    if (least > most)
        least = most > size ? most : size;
    for (size_t tried = size > most ? size : most;; tried = tried / 2 > least ? tried / 2 : least) {
        void *reserved = system_mmap(NULL, tried, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (reserved != MAP_FAILED) {
            uintptr_t old_top = space.top, old_end = space.end;
            space.top = (uintptr_t)reserved;
            space.end = (uintptr_t)reserved + tried;
            if (reservation_count < RESERVATIONS_KEPT) {
                reservations[reservation_count] = (struct address_range){space.top, space.end};
                /* Published after its entry: region_reserved_within. */
                __atomic_store_n(&reservation_count, reservation_count + 1, __ATOMIC_RELEASE);
            }
            if (old_top < old_end)
                give(old_top, old_end);
            return true;
        }
        if (tried == least)
            return false;
    }
}

/* The start of size free bytes of the reservation, now in use; 0 when
 * there are none.  The lock held.  The best fit among the given back,
 * else the untouched rest. */
static uintptr_t take(size_t size)
{
    unsigned best = space.free_count;
    for (unsigned i = 0; i < space.free_count; i++) {
        size_t length = space.free[i].end - space.free[i].start;
        if (length >= size && (best == space.free_count || length < space.free[best].end - space.free[best].start))
            best = i;
    }
    if (best < space.free_count) {
        uintptr_t start = space.free[best].start;
        space.free[best].start += size;
        if (space.free[best].start == space.free[best].end) {
            memmove(&space.free[best], &space.free[best + 1], (space.free_count - best - 1) * sizeof space.free[0]);
            space.free_count--;
        }
        return start;
    }
    if (space.end - space.top < size && !reserve(size))
        return 0;
    uintptr_t start = space.top;
    space.top += size;
    return start;
}

/* Whether [start, start + size) was free, now in use: a region grows in
 * place.  The lock held. */
static bool take_at(uintptr_t start, size_t size)
{
    if (start == space.top && space.end - space.top >= size) {
        space.top += size;
        return true;
    }
    for (unsigned i = 0; i < space.free_count; i++) {
        if (space.free[i].start != start)
            continue;
        if (space.free[i].end - start < size)
            return false;
        space.free[i].start += size;
        if (space.free[i].start == space.free[i].end) {
            memmove(&space.free[i], &space.free[i + 1], (space.free_count - i - 1) * sizeof space.free[0]);
            space.free_count--;
        }
        return true;
    }
    return false;
}

static uintptr_t take_locked(size_t size)
{
    spin_lock(&space_lock);
    uintptr_t start = take(size);
    spin_unlock(&space_lock);
    return start;
}

static void give_locked(uintptr_t start, size_t size)
{
    spin_lock(&space_lock);
    give(start, start + size);
    spin_unlock(&space_lock);
}

/* Maps [start, start + size) of the reservation with protection, zeroed
 * or fd's from offset.  The range is the monitor's, so MAP_FIXED replaces
 * nothing of anyone else's. */
static bool commit(uintptr_t start, size_t size, int protection, int fd, long offset)
{
    int flags = MAP_PRIVATE | MAP_FIXED | (fd < 0 ? MAP_ANONYMOUS : 0);
    return system_mmap((void *)start, size, protection, flags, fd, offset) != MAP_FAILED;
}

/* Gives [start, start + size) back to the reservation: its memory to the
 * kernel, its addresses to the monitor. */
static void release(uintptr_t start, size_t size)
{
    void *covered = system_mmap((void *)start, size, PROT_NONE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (covered == MAP_FAILED) {
        /* Out of mappings (vm.max_map_count): the range leaves the
         * reservation, as it must not stay mapped. */
        system_munmap((void *)start, size);
        return;
    }
    give_locked(start, size);
}

void *region_map_as(size_t size, int protection, int fd, long offset)
{
    size = page_round(size);
    uintptr_t start = take_locked(size);
    if (!start)
        return NULL;
    if (!commit(start, size, protection, fd, offset)) {
        give_locked(start, size);
        return NULL;
    }
    atomic_fetch_add_explicit(&mapped_bytes, size, memory_order_relaxed);
    return (void *)start;
}

void *region_map(size_t size)
{
    return region_map_as(size, PROT_READ | PROT_WRITE, -1, 0);
}

bool address_range_first_overlap(const struct address_range *ranges, unsigned count, uintptr_t start, uintptr_t end,
                                 uintptr_t *cut_start, uintptr_t *cut_end)
{
    bool found = false;
    for (unsigned i = 0; i < count; i++) {
        if (ranges[i].end <= start || ranges[i].start >= end)
            continue;
        if (!found || ranges[i].start < *cut_start) {
            *cut_start = ranges[i].start > start ? ranges[i].start : start;
            *cut_end = ranges[i].end < end ? ranges[i].end : end;
            found = true;
        }
    }
    return found;
}

bool region_reserved_within(uintptr_t start, uintptr_t end, uintptr_t *cut_start, uintptr_t *cut_end)
{
    return address_range_first_overlap(reservations, __atomic_load_n(&reservation_count, __ATOMIC_ACQUIRE), start,
                                       end, cut_start, cut_end);
}

bool region_reserved(const void *start, size_t size)
{
    uintptr_t low = (uintptr_t)start, high = low + size;
    bool reserved = false;
    spin_lock(&space_lock);
    for (unsigned i = 0; i < reservation_count && !reserved; i++)
        reserved = low >= reservations[i].start && high <= reservations[i].end && low <= high;
    spin_unlock(&space_lock);
    return reserved;
}

void region_unmap(void *region, size_t size)
{
    if (!region)
        return;
    size = page_round(size);
    release((uintptr_t)region, size);
    atomic_fetch_sub_explicit(&mapped_bytes, size, memory_order_relaxed);
}

void *region_grow(void *region, size_t old_size, size_t new_size)
{
    old_size = page_round(old_size);
    new_size = page_round(new_size);
    if (new_size <= old_size)
        return region;
    uintptr_t start = (uintptr_t)region, tail = start + old_size;
    spin_lock(&space_lock);
    bool in_place = take_at(tail, new_size - old_size);
    spin_unlock(&space_lock);
    if (in_place) {
        if (!commit(tail, new_size - old_size, PROT_READ | PROT_WRITE, -1, 0)) {
            give_locked(tail, new_size - old_size);
            return NULL;
        }
        atomic_fetch_add_explicit(&mapped_bytes, new_size - old_size, memory_order_relaxed);
        return region;
    }
    uintptr_t moved = take_locked(new_size);
    if (!moved)
        return NULL;
    /* mremap moves one mapping only: a region grown in place before is two
     * or more (the kernel merges neighbours only where it can), so its
     * memory is copied instead. */
    if (system_mremap(region, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)moved) == MAP_FAILED) {
        if (!commit(moved, new_size, PROT_READ | PROT_WRITE, -1, 0)) {
            give_locked(moved, new_size);
            return NULL;
        }
        memcpy((void *)moved, region, old_size);
        release(start, old_size);
        atomic_fetch_add_explicit(&mapped_bytes, new_size - old_size, memory_order_relaxed);
        return (void *)moved;
    }
    /* The old range is a hole now: covered again unless someone else
     * mapped into it meanwhile, in which case it is theirs. */
    void *covered = system_mmap(region, old_size, PROT_NONE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (covered == region)
        give_locked(start, old_size);
    else if (covered != MAP_FAILED) /* a kernel older than 4.17 took the flag as a hint */
        system_munmap(covered, old_size);
    atomic_fetch_add_explicit(&mapped_bytes, new_size - old_size, memory_order_relaxed);
    return (void *)moved;
}

void *arena_alloc(size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size > ARENA_CHUNK / 4)
        return region_map(size);
    spin_lock(&arena_lock);
    if ((size_t)(arena_end - arena_next) < size) {
        char *chunk = region_map(ARENA_CHUNK);
        if (!chunk) {
            spin_unlock(&arena_lock);
            return NULL;
        }
        arena_next = chunk;
        arena_end = chunk + ARENA_CHUNK;
    }
    void *object = arena_next;
    arena_next += size;
    spin_unlock(&arena_lock);
    return object;
}

void region_release_unused(void)
{
    spin_lock(&space_lock);
    if (space.top < space.end)
        system_munmap((void *)space.top, space.end - space.top);
    space.top = space.end;
    for (unsigned i = 0; i < space.free_count; i++)
        system_munmap((void *)space.free[i].start, space.free[i].end - space.free[i].start);
    space.free_count = 0;
    spin_unlock(&space_lock);
}

size_t monitor_mapped_bytes(void)
{
    return atomic_load_explicit(&mapped_bytes, memory_order_relaxed);
}

void arena_fork_prepare(void)
{
    spin_lock(&arena_lock);
    spin_lock(&space_lock);
}

void arena_fork_parent(void)
{
    spin_unlock(&space_lock);
    spin_unlock(&arena_lock);
}

void arena_fork_child(void)
{
    spin_reset(&space_lock);
    spin_reset(&arena_lock);
}
