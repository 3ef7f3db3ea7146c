/* The prepared file: a trace turned into what a replay needs and nothing
 * else, laid out to be mapped and played without parsing or malloc.
 * Internal to mprof-replay (prepare or synthetic write it, run reads it);
 * not a stable format, so only its own version is accepted.
 *
 *   struct prepared_header
 *   struct prepared_thread[threads]      where each thread's events start
 *   struct prepared_event[events]        each thread's events, in its order
 */
#ifndef MPROF_REPLAY_PREPARED_H
#define MPROF_REPLAY_PREPARED_H

#include <stdint.h>

#define PREPARED_MAGIC "MPRFPREP"
#define PREPARED_VERSION 1u
#define NO_OBJECT UINT32_MAX

enum prepared_op {
    OP_MALLOC,
    OP_CALLOC,
    OP_MEMALIGN,
    OP_REALLOC_NULL, /* realloc(NULL, size): an allocation */
    OP_REALLOC,      /* of old_object to size, giving object */
    OP_FREE,
};

/* What prepare and run both report, so that a test can compare them. */
struct prepared_figures {
    uint64_t events, threads, allocations, frees, reallocs, bytes_allocated;
    uint64_t peak_live_bytes, peak_live_blocks, unmatched_frees, duration_ns, max_size;
    uint64_t live_digest; /* FNV-1a over the live bytes after each event, in order */
};

struct prepared_header {
    char magic[8];
    uint32_t version;
    uint32_t threads;
    uint64_t events;
    uint64_t objects;
    uint64_t max_alignment;
    struct prepared_figures figures;
};

struct prepared_thread {
    uint64_t first; /* index of its first event */
    uint64_t count;
};

struct prepared_event {
    uint64_t size;
    uint64_t order;       /* its place in the recorded order of all events, from 0 */
    uint32_t object;      /* the block it returns, or frees */
    uint32_t old_object;  /* a realloc's old block */
    uint8_t op;
    uint8_t alignment_log2;
    uint8_t waits;        /* frees or reallocs a block another thread returned */
    uint8_t unused[5];
};

/* The digest's steps (FNV-1a, 64 bits, over each value's 8 bytes, low first). */
#define DIGEST_START UINT64_C(14695981039346656037)
static inline uint64_t digest_add(uint64_t digest, uint64_t value)
{
    for (unsigned i = 0; i < 8; i++) {
        digest ^= (uint8_t)(value >> 8 * i);
        digest *= UINT64_C(1099511628211);
    }
    return digest;
}

#endif
