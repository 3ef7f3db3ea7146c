/* The trace: every allocation event of the process, in order, written as
 * the program runs into a file of its own beside the data file (mprof(5),
 * THE TRACE FILE), for mprof replay.  Only with MPROF_TRACE. */
#ifndef MPROF_TRACE_H
#define MPROF_TRACE_H

#include <stdbool.h>
#include <stdint.h>

/* Event ops of the format. */
#define TRACE_OP_ALLOC 1u
#define TRACE_OP_FREE 2u
#define TRACE_OP_REALLOC 3u

/* One thread's events not yet written, as the format encodes them.  Part
 * of a thread state, guarded by its lock. */
struct trace_stream {
    uint8_t *events; /* TRACE_STREAM_SIZE bytes, mapped at the first event */
    uint32_t used;
    uint32_t thread; /* the stream's number in the file, once numbered */
    bool numbered;
    uint64_t count;  /* events in the buffer */
    uint64_t last_sequence, last_tsc;
    uintptr_t last_address;
};

/* Whether this process traces: set by monitor_init, read-only after. */
extern bool trace_enabled;

/* The next number in the process's one order of events.  Taken for an
 * allocation after the real allocator returned the block, for a free
 * before the real free: so an address is freed before it is handed out
 * again, in this order too. */
uint64_t trace_sequence(void);

/* Appends an event to the thread's stream, writing the stream out when it
 * is full; the thread state's lock held.  path is the PATH entry's index
 * + 1, or 0. */
void trace_allocation(struct trace_stream *stream, uint64_t sequence, unsigned function, uint64_t size,
                      uint64_t alignment, uintptr_t address, uint32_t path);
void trace_free(struct trace_stream *stream, uint64_t sequence, unsigned function, uintptr_t address);
void trace_realloc(struct trace_stream *stream, uint64_t sequence, uint64_t later, uint64_t size,
                   uintptr_t old_address, uintptr_t address, uint32_t path);

/* Writes every thread's stream and the end block, and renames the file
 * into place; afterwards events are dropped.  bounded: from a signal
 * handler, which must not wait for a lock its own thread may hold. */
void trace_finish(bool bounded);

/* A stream of a thread state that a fork child empties: its events are
 * the parent's. */
void trace_stream_forget(struct trace_stream *stream);
void trace_fork_prepare(void);
void trace_fork_parent(void);
/* The child writes a trace of its own, numbered afresh. */
void trace_fork_child(void);

#endif
