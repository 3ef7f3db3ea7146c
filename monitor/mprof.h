/* The C API of libmprof, for programs linked against it or run under it
 * (see libmprof(3)).  Allocation profiling needs none of it: linking or
 * preloading the library is enough.
 *
 * The MPROF_ macros are for programs that may run without mprof: they call
 * the library only when it is there (its functions are weak references
 * here), and cost a load and a branch when it is not.  Programs linked
 * against libmprof may call the functions themselves. */
#ifndef MPROF_H
#define MPROF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define MPROF_WEAK_ __attribute__((weak))
#else
#define MPROF_WEAK_
#endif

/* Writes a snapshot now, as the dump signal would, into a file of its own
 * (FILE.snapN, N counting from 1); the data file itself is still written
 * at exit. */
void mprof_dump(void) MPROF_WEAK_;

/* Pools: a program's own allocator announces each object it hands out and
 * takes back, and mprof counts them as it counts malloc's blocks, under
 * their call paths with the pool's name as the innermost frame.  A pool is
 * named by its anchor, any address the program passes to every call about
 * it (the pool's structure, say).  Objects announced with a NULL anchor
 * are malloc-like blocks of no pool. */

/* Creates the pool at anchor; name (copied, at most 55 bytes kept) names
 * it in the reports, or NULL for "the pool created in this function".  A
 * pool at anchor not destroyed is destroyed first. */
void mprof_pool_create(const void *anchor, const char *name) MPROF_WEAK_;
/* The same, with flags: MPROF_POOL_OF_BACKING, the pool's objects are the
 * backing of other objects (a metapool's superblocks in Valgrind's terms),
 * counted in no figure; MPROF_POOL_AUTO_FREE with it, freeing one of them
 * frees the malloc-like blocks inside it. */
void mprof_pool_create_ext(const void *anchor, const char *name, unsigned flags) MPROF_WEAK_;
#define MPROF_POOL_OF_BACKING 1u
#define MPROF_POOL_AUTO_FREE 2u
/* Frees every object of the pool, and forgets the pool. */
void mprof_pool_destroy(const void *anchor) MPROF_WEAK_;
/* Frees every object of the pool at once, as an arena's reset does. */
void mprof_pool_reset(const void *anchor) MPROF_WEAK_;
/* object, of size bytes, is allocated from the pool. */
void mprof_pool_alloc(const void *anchor, const void *object, size_t size) MPROF_WEAK_;
/* object goes back to the pool. */
void mprof_pool_free(const void *anchor, const void *object) MPROF_WEAK_;
/* old is freed and object, of size bytes, allocated (either may be NULL;
 * they may be equal, for a block resized in place).  With a NULL anchor, a
 * block resized in place that no malloc-like block is at may be one of
 * malloc's, resized as memcheck's VALGRIND_RESIZEINPLACE_BLOCK has it. */
void mprof_pool_realloc(const void *anchor, const void *old, const void *object, size_t size) MPROF_WEAK_;
/* Frees the pool's objects that lie wholly outside [start, start + size). */
void mprof_pool_trim(const void *anchor, const void *start, size_t size) MPROF_WEAK_;
/* The pool at from is at to from now on. */
void mprof_pool_move(const void *from, const void *to) MPROF_WEAK_;

/* Backing: the blocks a pool carves its objects from are the pool's, not
 * the program's, and are kept out of every figure (the summary counts them
 * apart), so that no byte is counted twice.  Every block the calling thread
 * allocates between mprof_backing_begin and mprof_backing_end is backing:
 * the exact way, since the block never enters the figures.  A block
 * already allocated becomes backing with mprof_backing_block: it leaves
 * the figures then, and its allocation with it; until then it was the
 * program's, at the peak too.  A pool's anchor that holds the pool's first
 * object becomes backing at that object, as memcheck has it. */
void mprof_backing_begin(void) MPROF_WEAK_;
void mprof_backing_end(void) MPROF_WEAK_;
void mprof_backing_block(const void *block) MPROF_WEAK_;

#define MPROF_CALL_(function, arguments) \
    do {                                 \
        if (function)                    \
            function arguments;          \
    } while (0)

#define MPROF_DUMP() MPROF_CALL_(mprof_dump, ())
#define MPROF_POOL_CREATE(anchor, name) MPROF_CALL_(mprof_pool_create, (anchor, name))
#define MPROF_POOL_CREATE_EXT(anchor, name, flags) MPROF_CALL_(mprof_pool_create_ext, (anchor, name, flags))
#define MPROF_POOL_DESTROY(anchor) MPROF_CALL_(mprof_pool_destroy, (anchor))
#define MPROF_POOL_RESET(anchor) MPROF_CALL_(mprof_pool_reset, (anchor))
#define MPROF_POOL_ALLOC(anchor, object, size) MPROF_CALL_(mprof_pool_alloc, (anchor, object, size))
#define MPROF_POOL_FREE(anchor, object) MPROF_CALL_(mprof_pool_free, (anchor, object))
#define MPROF_POOL_REALLOC(anchor, old, object, size) MPROF_CALL_(mprof_pool_realloc, (anchor, old, object, size))
#define MPROF_POOL_TRIM(anchor, start, size) MPROF_CALL_(mprof_pool_trim, (anchor, start, size))
#define MPROF_POOL_MOVE(from, to) MPROF_CALL_(mprof_pool_move, (from, to))
#define MPROF_BACKING_BLOCK(block) MPROF_CALL_(mprof_backing_block, (block))
/* The value of allocation, an expression that allocates a pool's backing
 * block: arena->base = MPROF_BACKING(malloc(size)); */
#define MPROF_BACKING(allocation)                                   \
    __extension__({                                                 \
        if (mprof_backing_begin)                                    \
            mprof_backing_begin();                                  \
        __typeof__(allocation) mprof_backing_block_ = (allocation); \
        if (mprof_backing_end)                                      \
            mprof_backing_end();                                    \
        mprof_backing_block_;                                       \
    })

#ifdef __cplusplus
}
#endif

#endif
