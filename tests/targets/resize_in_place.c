/* VALGRIND_RESIZEINPLACE_BLOCK, through mprof_valgrind.h, on what is no
 * malloc-like block, as a program whose own realloc grows or shrinks the
 * malloc'ed blocks it holds in place:
 *
 * - shrink_and_free: a block of 100 bytes from malloc, resized to 50 in
 *   place, then freed;
 * - keep_shrunk: a block of 64 bytes from malloc, resized to 40, never
 *   freed;
 * - shrink_aligned: a block of 256 bytes from posix_memalign (kept in the
 *   monitor's map, not under a header), resized to 200, then freed;
 * - resize_no_block: a static buffer and a page from mmap, no blocks of any
 *   allocator (memcheck refuses both as invalid frees); the page is
 *   unmapped at the end.
 *
 * memcheck: 3 allocations of 420 bytes, 2 frees, 40 bytes in 1 block lost
 * (keep_shrunk's), 2 invalid frees. */
#include <stdlib.h>
#include <sys/mman.h>

#include "mprof_valgrind.h"

static char buffer[64];

static void shrink_and_free(void)
{
    char *block = malloc(100);
    VALGRIND_RESIZEINPLACE_BLOCK(block, 100, 50, 0);
    free(block);
}

static void keep_shrunk(void)
{
    char *block = malloc(64);
    VALGRIND_RESIZEINPLACE_BLOCK(block, 64, 40, 0);
}

static void shrink_aligned(void)
{
    void *block;
    if (posix_memalign(&block, 64, 256) != 0)
        abort();
    VALGRIND_RESIZEINPLACE_BLOCK(block, 256, 200, 0);
    free(block);
}

static void resize_no_block(char *page)
{
    VALGRIND_RESIZEINPLACE_BLOCK(buffer, 32, 16, 0);
    VALGRIND_RESIZEINPLACE_BLOCK(page, 4096, 30, 0);
}

int main(void)
{
    char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return 1;
    shrink_and_free();
    keep_shrunk();
    shrink_aligned();
    resize_no_block(page);
    munmap(page, 4096);
    return 0;
}
