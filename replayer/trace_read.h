/* Reading a trace file (mprof(5), THE TRACE FILE) into memory, checking
 * every field; any problem ends the program with one line naming it. */
#ifndef MPROF_REPLAY_TRACE_READ_H
#define MPROF_REPLAY_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

struct traced_event {
    uint64_t sequence, later; /* later: a realloc's new block, after sequence */
    uint64_t tsc;
    uint64_t size, alignment;
    uint64_t address, old_address;
    uint32_t thread;
    uint8_t op, function;
};

struct trace {
    struct traced_event *events; /* each thread's in its order, threads one after another */
    size_t count;
    uint32_t threads;
    uint64_t duration_ns; /* from the first event to the last */
};

void trace_read(const char *path, struct trace *trace);

#endif
