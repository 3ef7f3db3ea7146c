/* The monitor's memory of arena.h: regions mapped, grown and unmapped
 * whole, and a bump arena of small pieces never given back. */
#include "arena.h"

#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compiler.h"
#include "lock.h"

#define PAGE_SIZE 4096u
#define ARENA_CHUNK (256u * 1024u)

/* Bytes currently mapped by the monitor; updated atomically by any thread. */
static atomic_size_t mapped_bytes;

/* The current arena chunk; guarded by arena_lock.  Objects are never freed,
 * so a chunk is abandoned, not released, when it runs out. */
static spinlock_t arena_lock = SPINLOCK_INIT;
static char *arena_next;
static char *arena_end;

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

void *region_map(size_t size)
{
    size = page_round(size);
    void *region = system_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED)
        return NULL;
    atomic_fetch_add_explicit(&mapped_bytes, size, memory_order_relaxed);
    return region;
}

void region_unmap(void *region, size_t size)
{
    if (!region)
        return;
    size = page_round(size);
    system_munmap(region, size);
    atomic_fetch_sub_explicit(&mapped_bytes, size, memory_order_relaxed);
}

void *region_grow(void *region, size_t old_size, size_t new_size)
{
    old_size = page_round(old_size);
    new_size = page_round(new_size);
    void *grown = system_mremap(region, old_size, new_size, MREMAP_MAYMOVE, NULL);
    if (grown == MAP_FAILED)
        return NULL;
    atomic_fetch_add_explicit(&mapped_bytes, new_size - old_size, memory_order_relaxed);
    return grown;
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

size_t monitor_mapped_bytes(void)
{
    return atomic_load_explicit(&mapped_bytes, memory_order_relaxed);
}

void arena_fork_prepare(void)
{
    spin_lock(&arena_lock);
}

void arena_fork_parent(void)
{
    spin_unlock(&arena_lock);
}

void arena_fork_child(void)
{
    spin_reset(&arena_lock);
}
