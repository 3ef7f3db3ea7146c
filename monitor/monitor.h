/* The monitor's core, between the interposed functions (preload.c,
 * newdelete.c) and the aggregates.  Wrappers follow one pattern: make sure
 * the monitor is ready, call the real function, record. */
#ifndef MPROF_MONITOR_H
#define MPROF_MONITOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compiler.h"
#include "options.h"
#include "block_map.h"
#include "thread.h"

enum monitor_status {
    MONITOR_UNINITIALISED, /* no call has reached the monitor yet */
    MONITOR_STARTING,      /* one thread is resolving the real functions */
    MONITOR_ACTIVE,        /* recording */
    MONITOR_OFF,           /* forwarding only: secure-execution, not followed, or finished */
};

/* Written by the first thread into monitor_init, read by every call. */
extern _Atomic int monitor_status;

#define DEFERRED_FREES_MAX 32

/* Per-thread: the state, and the guard that sends the monitor's own
 * allocations (libunwind's, dlsym's) and those of signal handlers that
 * interrupt it straight to the real allocator. */
struct monitor_tls {
    struct thread_state *state;
    int busy;
    unsigned allocs_since_clock; /* see checkpoint_tick */
    /* With MPROF_TRACE, what a wrapper knows that monitor_alloc writes into
     * the trace: the alignment an aligned allocation asked for, and a
     * realloc's old block with the sequence number it was released at
     * (0: none pending). */
    size_t trace_alignment;
    uintptr_t trace_realloc_from; /* leak_hidden */
    uint64_t trace_realloc_sequence;
    /* Whether the thread's next allocations are a pool's backing (pools.h):
     * bit 0 for the next alone (a realloc of a backing block), 2 for each
     * MPROF_POOL_BACKING the thread is inside. */
    unsigned backing;
    /* Blocks a signal handler freed while it interrupted the monitor: the
     * map cannot be touched then, so they stay allocated until the monitor
     * returns (monitor_apply_deferred).  Pushed by handlers, popped with
     * compare-and-swap by the interrupted code. */
    _Atomic unsigned deferred_count;
    uintptr_t deferred[DEFERRED_FREES_MAX]; /* leak_hidden */
    /* The same for the figures of the regions such a handler unmapped
     * (monitor_defer_cuts), kept in the thread's state. */
    _Atomic unsigned deferred_cut_count;
    /* A thread of the monitor's own (own_thread.h): busy all its life, and
     * nothing it frees waits, as no recording is under way to apply it. */
    bool own_thread;
};
extern __thread struct monitor_tls monitor_tls __attribute__((tls_model("initial-exec")));

/* Runs once; afterwards monitor_status is ACTIVE or OFF. */
void monitor_init(void);

/* Recording; each is called outside the real allocator and sets the busy
 * guard itself.  field is the summary counter of the entry point; headed:
 * block has room for a header before it, which monitor_alloc writes, and
 * takes the place of the pointer map. */
void monitor_alloc(void *block, size_t size, enum mprof_summary_field field, bool headed);
/* For free and delete, before the real free. */
void monitor_free(void *block, enum mprof_summary_field field);
/* The same for a block with a header (header.h), which stays to be read. */
void monitor_free_headed(void *block, enum mprof_summary_field field);
/* For free and delete while the monitor is busy on this thread (a signal
 * handler interrupted it): the free is applied, and the block released,
 * when the monitor returns.  False when too many are waiting. */
bool monitor_defer_free(void *block, enum mprof_summary_field field);
/* Counts a call that allocated nothing (a failure, or realloc to 0). */
void monitor_count(enum mprof_summary_field field, enum mprof_summary_field second);
/* For realloc: take the old block out before the real realloc, so that no
 * other thread can be handed its address while it is still in the map. */
bool monitor_take(void *block, struct block_info *info);
/* The real realloc released the old block taken (known) or not: freed it
 * (to 0 bytes), or moved it to the block monitor_alloc is told of next.
 * sequence: the trace's number for the release, taken before the real
 * realloc, or 0 when not tracing. */
void monitor_released(void *block, bool known, const struct block_info *info, uint64_t sequence, bool freed);
void monitor_count_untracked(void);

struct block_table;
/* A pool's object (pools.c): counted as monitor_alloc counts a block, in
 * the pool's own table, under its call path and the pool's frame. */
void monitor_pool_alloc(struct block_table *objects, uint32_t frame, const void *object, size_t size);
/* A piece of a pool of backing (mprof.h's MPROF_POOL_OF_BACKING) into the
 * pool's table, counted as backing only. */
void monitor_pool_backing(struct block_table *objects, const void *piece, size_t size);
/* Frees one object of the pool's table; an object it does not hold is an
 * unknown free. */
void monitor_pool_free(struct block_table *objects, const void *object);
/* Frees every object of a table taken out of its pool (slots of them, wide
 * entries), as a pool reset does. */
void monitor_pool_free_all(const uint64_t *words, uint64_t slots);
struct block_header;
/* The live block the program holds at block, allocated by the monitor,
 * becomes backing: out of every figure from now on, its allocation too.
 * header: what precedes block, read where it cannot fault, or NULL when
 * it could not be read; a block with no header must be in the map. */
void monitor_make_backing(void *block, const struct block_header *header);
/* Memory the program maps itself (mapped.c), counted in the figures of
 * its path alone (a region is no block of the heap's).  The path of the
 * calling chain with frame innermost (format.h's MPROF_MMAP_FRAME or
 * MPROF_BRK_FRAME), for a region about to be mapped; PATH_NONE when it
 * cannot be counted. */
uint32_t monitor_mapping_path(uintptr_t frame);
/* A region a call took some of: struct mapping_cut, thread.h. */
/* What a call did: field counts the call, when it mapped a counted region
 * (bytes at path; PATH_NONE: none) or cut some. */
void monitor_mapping_done(enum mprof_summary_field field, uint32_t path, uint64_t bytes,
                          const struct mapping_cut *cuts, size_t count);
/* The cuts of a call made while the monitor is busy on this thread (a
 * signal handler interrupted it), and the call (field): counted when it
 * returns. */
void monitor_defer_cuts(enum mprof_summary_field field, const struct mapping_cut *cuts, size_t count);

/* A resize in place of block, the program's live block of the malloc
 * family, to size bytes, announced as a pool's (mprof_pool_realloc): a
 * free and an allocation at the calling path, as a realloc that kept its
 * place is counted, and its free from now on of the new size.  header:
 * what precedes block, or NULL when it could not be read.  False, and
 * nothing counted, when block is no such block (a region the program
 * mapped, or no block at all). */
bool monitor_resize_block(void *block, const struct block_header *header, size_t size);
/* Whether block is a live block the monitor returned that holds
 * [object, object + size); header: what precedes block, or NULL when it
 * could not be read. */
bool monitor_block_holds(void *block, const struct block_header *header, const void *object, size_t size);

struct leak_caller;
/* The process is ending (exit, _exit, quick_exit, or end_signal, from its
 * handler): writes its final file, once; afterwards the monitor forwards
 * every call without recording.  caller: where the program called from,
 * to classify the blocks left (leak_scan.h); NULL: they are not. */
void monitor_finish(int end_signal, const struct leak_caller *caller);
/* mprof attach (attach.c): starts the monitor in a process that loaded it
 * with dlopen, to write output; false when it had started already, or
 * cannot. */
bool monitor_start_attached(const char *output);

/* Lifecycle hooks for preload.c's wrappers of exec and dlclose. */
void monitor_before_exec(void);
void monitor_before_dlclose(void);
void monitor_after_dlclose(void);

/* The environment to give an exec'd program: with MPROF_ROOT_PID=0 when
 * this process is the first of the run or envp lacks the variable, so the
 * new image writes FILE.PID; envp itself when nothing needs to change. */
char *const *monitor_exec_environment(char *const *envp);

#endif
