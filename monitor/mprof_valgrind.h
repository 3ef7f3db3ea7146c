/* Valgrind's client requests for custom allocators, profiled by mprof too
 * (see libmprof(3)).  Included instead of <valgrind/valgrind.h>, or after
 * it, by code annotated for memcheck: each request below still goes to
 * Valgrind when the program runs under it, and also tells mprof's pool API
 * (mprof.h) when the program runs under mprof; neither costs more than a
 * few instructions when absent.
 *
 *   MALLOCLIKE_BLOCK, FREELIKE_BLOCK, RESIZEINPLACE_BLOCK: blocks of no
 *     pool, mprof's "[malloc-like blocks]"; RESIZEINPLACE_BLOCK resizes a
 *     block of the malloc family too, as memcheck does;
 *   CREATE_MEMPOOL(_EXT), DESTROY_MEMPOOL, MEMPOOL_ALLOC, MEMPOOL_FREE,
 *     MEMPOOL_TRIM, MOVE_MEMPOOL, MEMPOOL_CHANGE: a pool and its objects;
 *     a metapool's pieces are backing, as are a pool's anchor block when
 *     it holds the pool's objects. */
#ifndef MPROF_VALGRIND_H
#define MPROF_VALGRIND_H

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define MPROF_VALGRIND_REQUESTS_ 1
#endif
#endif

#include "mprof.h"

#ifndef MPROF_VALGRIND_REQUESTS_
/* Without Valgrind's header the requests go to mprof alone. */
#define VALGRIND_MEMPOOL_AUTO_FREE 1
#define VALGRIND_MEMPOOL_METAPOOL 2
#endif

#undef VALGRIND_MALLOCLIKE_BLOCK
#undef VALGRIND_FREELIKE_BLOCK
#undef VALGRIND_RESIZEINPLACE_BLOCK
#undef VALGRIND_CREATE_MEMPOOL
#undef VALGRIND_CREATE_MEMPOOL_EXT
#undef VALGRIND_DESTROY_MEMPOOL
#undef VALGRIND_MEMPOOL_ALLOC
#undef VALGRIND_MEMPOOL_FREE
#undef VALGRIND_MEMPOOL_TRIM
#undef VALGRIND_MOVE_MEMPOOL
#undef VALGRIND_MEMPOOL_CHANGE

#ifdef MPROF_VALGRIND_REQUESTS_
#define MPROF_VALGRIND_REQUEST_(request, a1, a2, a3, a4, a5) \
    VALGRIND_DO_CLIENT_REQUEST_STMT(request, a1, a2, a3, a4, a5)
#else
#define MPROF_VALGRIND_REQUEST_(request, a1, a2, a3, a4, a5) \
    do {                                                     \
    } while (0)
#endif

#define VALGRIND_MALLOCLIKE_BLOCK(addr, sizeB, rzB, is_zeroed)                                      \
    do {                                                                                            \
        MPROF_VALGRIND_REQUEST_(VG_USERREQ__MALLOCLIKE_BLOCK, addr, sizeB, rzB, is_zeroed, 0);      \
        MPROF_POOL_ALLOC((const void *)0, (const void *)(addr), (size_t)(sizeB));                   \
    } while (0)
#define VALGRIND_FREELIKE_BLOCK(addr, rzB)                                    \
    do {                                                                      \
        MPROF_VALGRIND_REQUEST_(VG_USERREQ__FREELIKE_BLOCK, addr, rzB, 0, 0, 0); \
        MPROF_POOL_FREE((const void *)0, (const void *)(addr));               \
    } while (0)
#define VALGRIND_RESIZEINPLACE_BLOCK(addr, oldSizeB, newSizeB, rzB)                                    \
    do {                                                                                               \
        MPROF_VALGRIND_REQUEST_(VG_USERREQ__RESIZEINPLACE_BLOCK, addr, oldSizeB, newSizeB, rzB, 0);    \
        MPROF_POOL_REALLOC((const void *)0, (const void *)(addr), (const void *)(addr), (size_t)(newSizeB)); \
    } while (0)
#define VALGRIND_CREATE_MEMPOOL_EXT(pool, rzB, is_zeroed, flags)                                \
    do {                                                                                        \
        MPROF_VALGRIND_REQUEST_(VG_USERREQ__CREATE_MEMPOOL, pool, rzB, is_zeroed, flags, 0);    \
        MPROF_POOL_CREATE_EXT((const void *)(pool), (const char *)0,                            \
                              ((flags) & VALGRIND_MEMPOOL_METAPOOL ? MPROF_POOL_OF_BACKING : 0u) |  \
                                  ((flags) & VALGRIND_MEMPOOL_AUTO_FREE ? MPROF_POOL_AUTO_FREE : 0u)); \
    } while (0)
#define VALGRIND_CREATE_MEMPOOL(pool, rzB, is_zeroed) VALGRIND_CREATE_MEMPOOL_EXT(pool, rzB, is_zeroed, 0)
#define VALGRIND_DESTROY_MEMPOOL(pool)                                          \
    do {                                                                        \
        MPROF_VALGRIND_REQUEST_(VG_USERREQ__DESTROY_MEMPOOL, pool, 0, 0, 0, 0); \
        MPROF_POOL_DESTROY((const void *)(pool));                               \
    } while (0)
#define VALGRIND_MEMPOOL_ALLOC(pool, addr, size)                                      \
    do {                                                                              \
        MPROF_VALGRIND_REQUEST_(VG_USERREQ__MEMPOOL_ALLOC, pool, addr, size, 0, 0);   \
        MPROF_POOL_ALLOC((const void *)(pool), (const void *)(addr), (size_t)(size)); \
    } while (0)
#define VALGRIND_MEMPOOL_FREE(pool, addr)                                         \
    do {                                                                          \
        MPROF_VALGRIND_REQUEST_(VG_USERREQ__MEMPOOL_FREE, pool, addr, 0, 0, 0);   \
        MPROF_POOL_FREE((const void *)(pool), (const void *)(addr));              \
    } while (0)
#define VALGRIND_MEMPOOL_TRIM(pool, addr, size)                                      \
    do {                                                                             \
        MPROF_VALGRIND_REQUEST_(VG_USERREQ__MEMPOOL_TRIM, pool, addr, size, 0, 0);   \
        MPROF_POOL_TRIM((const void *)(pool), (const void *)(addr), (size_t)(size)); \
    } while (0)
#define VALGRIND_MOVE_MEMPOOL(poolA, poolB)                                        \
    do {                                                                           \
        MPROF_VALGRIND_REQUEST_(VG_USERREQ__MOVE_MEMPOOL, poolA, poolB, 0, 0, 0);  \
        MPROF_POOL_MOVE((const void *)(poolA), (const void *)(poolB));             \
    } while (0)
#define VALGRIND_MEMPOOL_CHANGE(pool, addrA, addrB, size)                                   \
    do {                                                                                    \
        MPROF_VALGRIND_REQUEST_(VG_USERREQ__MEMPOOL_CHANGE, pool, addrA, addrB, size, 0);   \
        MPROF_POOL_REALLOC((const void *)(pool), (const void *)(addrA), (const void *)(addrB), (size_t)(size)); \
    } while (0)

#endif
