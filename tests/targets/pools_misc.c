/* The rest of Valgrind's custom-allocator requests, through
 * mprof_valgrind.h, on memory from mmap (which neither memcheck's heap nor
 * mprof's blocks count):
 *
 * - a metapool with auto-free and a superblock of 64 KiB: carve_block
 *   makes 100 malloc-like blocks of 40 bytes in it, release_block frees 30
 *   of them, shrink_block resizes one to 24 bytes in place, and freeing the
 *   superblock frees the 70 left;
 * - a metapool without, and a superblock of 64 KiB: leak_blocks makes 20
 *   malloc-like blocks of 16 bytes in it, past its first 32 bytes, which
 *   stay when it is freed;
 * - a pool anchored on a static structure: fill_pool allocates 50 objects
 *   of 100 bytes, 10 are freed, grow_object moves one to a new place with
 *   200 bytes, the pool moves to another anchor and is trimmed to its first
 *   20 slots: the 19 objects left there and the moved one (in slot 60) are
 *   trimmed or kept as the trim says, and what stays is never freed. */
#include <stddef.h>
#include <sys/mman.h>

#include "mprof_valgrind.h"

#define SUPERBLOCK 65536u
#define SLOT 128u

static char meta_anchor, other_meta_anchor;
static char pool_a, pool_b;
static char *blocks[100];

static void *map(size_t size)
{
    return mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void carve_block(char *superblock, unsigned i)
{
    blocks[i] = superblock + 64 * i;
    VALGRIND_MALLOCLIKE_BLOCK(blocks[i], 40, 0, 0);
}

static void release_block(unsigned i)
{
    VALGRIND_FREELIKE_BLOCK(blocks[i], 0);
}

static void shrink_block(unsigned i)
{
    VALGRIND_RESIZEINPLACE_BLOCK(blocks[i], 40, 24, 0);
}

static void leak_blocks(char *superblock)
{
    for (unsigned i = 0; i < 20; i++)
        VALGRIND_MALLOCLIKE_BLOCK(superblock + 32 + 32 * i, 16, 0, 0);
}

static void fill_pool(char *base)
{
    for (unsigned i = 0; i < 50; i++)
        VALGRIND_MEMPOOL_ALLOC(&pool_a, base + SLOT * i, 100);
}

static void grow_object(char *base)
{
    VALGRIND_MEMPOOL_CHANGE(&pool_a, base + SLOT * 49, base + SLOT * 60, 200);
}

int main(void)
{
    char *first = map(SUPERBLOCK), *second = map(SUPERBLOCK), *base = map(SLOT * 64);
    VALGRIND_CREATE_MEMPOOL_EXT(&meta_anchor, 0, 0, VALGRIND_MEMPOOL_METAPOOL | VALGRIND_MEMPOOL_AUTO_FREE);
    VALGRIND_MEMPOOL_ALLOC(&meta_anchor, first, SUPERBLOCK);
    VALGRIND_CREATE_MEMPOOL_EXT(&other_meta_anchor, 0, 0, VALGRIND_MEMPOOL_METAPOOL);
    VALGRIND_MEMPOOL_ALLOC(&other_meta_anchor, second, SUPERBLOCK);
    for (unsigned i = 0; i < 100; i++)
        carve_block(first, i);
    for (unsigned i = 0; i < 30; i++)
        release_block(i);
    shrink_block(30);
    VALGRIND_MEMPOOL_FREE(&meta_anchor, first);
    leak_blocks(second);
    VALGRIND_MEMPOOL_FREE(&other_meta_anchor, second);

    VALGRIND_CREATE_MEMPOOL(&pool_a, 0, 0);
    fill_pool(base);
    for (unsigned i = 0; i < 10; i++)
        VALGRIND_MEMPOOL_FREE(&pool_a, base + SLOT * i);
    grow_object(base);
    VALGRIND_MOVE_MEMPOOL(&pool_a, &pool_b);
    VALGRIND_MEMPOOL_TRIM(&pool_b, base, SLOT * 20);
    return 0;
}
