/* Pool announcements at the edges of what libmprof(3) says, each with a
 * figure that tells it:
 *
 * - a metapool with auto-free, its two pieces of backing of 256 bytes A =
 *   super[0, 256) and B = super[256, 512); malloc-like blocks (no anchor)
 *   of 64 bytes at 0 and at 192 (which ends where A ends), of 32 at 256 (in
 *   B) and of 0 at 512 (in neither); freeing a piece at 512, where there is
 *   none, is an unknown free that frees nothing else; freeing A frees the
 *   two blocks wholly inside it, and nothing of B;
 * - the pool "trimmed", 3 objects of 16 bytes side by side, trimmed to the
 *   middle one's 16 bytes: the first (which ends where the middle one
 *   starts) and the last (which starts where it ends) go;
 * - a pool never created, 2 objects of 16 bytes announced in it: counted,
 *   under a frame of no name;
 * - mprof_backing_begin and mprof_backing_end with nothing between, then a
 *   malloc of 100 bytes, kept: an ordinary block;
 * - a malloc'ed block of 256 bytes, the anchor of the pool "carved", whose
 *   first object of 64 bytes is at the block's start: the block becomes
 *   backing (out of the figures, its allocation too); a second object of 64;
 * - a reset and a trim of a NULL anchor, and a free of a NULL object: none
 *   of them does anything.
 *
 * In all, 12 blocks allocated (468 bytes) and 4 freed (160 bytes); 13
 * objects announced, 2 freed one by one (one unknown), 2 sets freed at
 * once; 3 blocks of backing (768 bytes), 1 freed (256 bytes).  Frames: meta,
 * the malloc-like blocks', trimmed, the pool never created's, carved. */
#include <stdlib.h>

#include "mprof.h"

static char super[1024] __attribute__((aligned(16)));
static char row[48] __attribute__((aligned(16)));
static char loose[32] __attribute__((aligned(16)));
static char meta, trimmed, never;
void *volatile kept;

int main(void)
{
    MPROF_POOL_CREATE_EXT(&meta, "meta", MPROF_POOL_OF_BACKING | MPROF_POOL_AUTO_FREE);
    MPROF_POOL_ALLOC(&meta, super, 256);
    MPROF_POOL_ALLOC(&meta, super + 256, 256);
    MPROF_POOL_ALLOC(NULL, super, 64);
    MPROF_POOL_ALLOC(NULL, super + 192, 64);
    MPROF_POOL_ALLOC(NULL, super + 256, 32);
    MPROF_POOL_ALLOC(NULL, super + 512, 0);
    MPROF_POOL_FREE(&meta, super + 512);
    MPROF_POOL_FREE(&meta, super);

    MPROF_POOL_CREATE(&trimmed, "trimmed");
    for (int i = 0; i < 3; i++)
        MPROF_POOL_ALLOC(&trimmed, row + 16 * i, 16);
    MPROF_POOL_TRIM(&trimmed, row + 16, 16);

    MPROF_POOL_ALLOC(&never, loose, 16);
    MPROF_POOL_ALLOC(&never, loose + 16, 16);

    if (mprof_backing_begin && mprof_backing_end) {
        mprof_backing_begin();
        mprof_backing_end();
    }
    kept = malloc(100);

    char *block = malloc(256);
    if (!block)
        return 1;
    MPROF_POOL_CREATE(block, "carved");
    MPROF_POOL_ALLOC(block, block, 64);
    MPROF_POOL_ALLOC(block, block + 64, 64);

    MPROF_POOL_RESET(NULL);
    MPROF_POOL_TRIM(NULL, row, 16);
    MPROF_POOL_FREE(&trimmed, NULL);
    return 0;
}
