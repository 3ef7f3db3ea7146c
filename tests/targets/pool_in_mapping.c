/* Pools whose anchor is the start of a region the program mapped itself,
 * as jemalloc-style arenas announce their chunks: nothing is mapped below
 * the anchor, and the region is no block of the allocator's, so it is
 * never the pool's backing.  argv[1] chooses the region:
 *
 *   chunk    a 2 MiB chunk aligned to 2 MiB, carved from a 6 MiB mmap whose
 *            head (1 byte to 2 MiB, rounded to pages) and tail are unmapped;
 *   reserve  1 MiB committed with MAP_FIXED at the start of a 4 MiB
 *            PROT_NONE reservation;
 *   sbrk     1 MiB of break from sbrk;
 *   trim     an 8 MiB mmap'ed arena trimmed to nothing (VALGRIND_MEMPOOL_TRIM)
 *            and carved again.
 *
 * Each pool's anchor heads a struct arena; 10 objects of 200 bytes are
 * carved after it (20 for trim, the first 10 trimmed away).  Nothing is
 * allocated with malloc. */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mprof_valgrind.h"

#define MIB ((size_t)1 << 20)
#define OBJECTS 10
#define OBJECT_SIZE 200

struct arena {
    char *next;
    size_t pad; /* the objects start 16-aligned */
};

static void carve(struct arena *arena)
{
    for (int i = 0; i < OBJECTS; i++) {
        VALGRIND_MEMPOOL_ALLOC(arena, arena->next, OBJECT_SIZE);
        arena->next += 208;
    }
}

static struct arena *start_arena(char *region)
{
    struct arena *arena = (struct arena *)region;
    arena->next = (char *)(arena + 1);
    VALGRIND_CREATE_MEMPOOL(arena, 0, 0);
    carve(arena);
    return arena;
}

static char *chunk(void)
{
    char *base = mmap(NULL, 6 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *aligned = (char *)(((uintptr_t)base + 2 * MIB) & ~(uintptr_t)(2 * MIB - 1));
    munmap(base, (size_t)(aligned - base));
    munmap(aligned + 2 * MIB, (size_t)(base + 6 * MIB - (aligned + 2 * MIB)));
    return aligned;
}

static char *reserve(void)
{
    char *reserved = mmap(NULL, 4 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return mmap(reserved, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

static char *trimmed(void)
{
    char *region = mmap(NULL, 8 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct arena *arena = start_arena(region);
    VALGRIND_MEMPOOL_TRIM(arena, arena + 1, 0);
    arena->next = (char *)(arena + 1);
    return region;
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "";
    if (strcmp(which, "chunk") == 0)
        start_arena(chunk());
    else if (strcmp(which, "reserve") == 0)
        start_arena(reserve());
    else if (strcmp(which, "sbrk") == 0)
        start_arena(sbrk(MIB));
    else if (strcmp(which, "trim") == 0)
        carve((struct arena *)trimmed());
    else
        return 2;
    return write(1, "ok\n", 3) == 3 ? 0 : 1;
}
