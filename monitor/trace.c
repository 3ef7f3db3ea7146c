/* Writing the trace (trace.h): each thread encodes its events into a
 * buffer of its own; a full buffer is compressed with zstd and appended to
 * the file as one block, under the file's lock. */
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_initStaticCCtx: a context that never calls malloc */
#include <zstd.h>

#include "arena.h"
#include "compiler.h"
#include "lock.h"
#include "log.h"
#include "output.h"
#include "runlog.h"
#include "state.h"

#define TRACE_MAGIC "MPROFTRC"
#define TRACE_VERSION 1
#define TRACE_HEADER_SIZE 64
#define TRACE_BLOCK_HEADER_SIZE 32
#define TRACE_BLOCK_EVENTS 1u
#define TRACE_BLOCK_END 2u

/* 128 KB of events a thread (about 10,000 events): large enough that zstd
 * finds the repeats of a program's sizes and paths, small enough that a
 * program with hundreds of threads keeps a bounded few MB. */
#define TRACE_STREAM_SIZE (128u << 10)
/* The longest event: op, then at most seven varints of 10 bytes. */
#define TRACE_EVENT_MAX 80u
/* Level 1: the program waits while its thread compresses. */
#define TRACE_ZSTD_LEVEL 1

bool trace_enabled;

/* The process's one order of events (trace_sequence). */
static atomic_uint_least64_t next_sequence = 1;
/* Numbers streams in the order of their first event. */
static atomic_uint next_stream_number;

/* The file and the compressor, shared by every thread; all guarded by
 * lock, which is taken with a thread state's lock already held (never the
 * other way round). */
static struct {
    spinlock_t lock;
    struct output output;
    bool created;
    bool failed;   /* a write failed: the trace is removed at the end */
    bool finished; /* written and renamed: later events are dropped */
    ZSTD_CCtx *compressor;
    uint8_t *compressed;
    size_t compressed_capacity;
    uint64_t events_written;
} file = {.lock = SPINLOCK_INIT};

uint64_t trace_sequence(void)
{
    return atomic_fetch_add_explicit(&next_sequence, 1, memory_order_relaxed);
}

static inline uint8_t *put_uv(uint8_t *at, uint64_t value)
{
    while (value >= 0x80) {
        *at++ = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    *at++ = (uint8_t)value;
    return at;
}

static inline uint8_t *put_sv(uint8_t *at, int64_t value)
{
    return put_uv(at, ((uint64_t)value << 1) ^ (uint64_t)(value >> 63));
}

static inline uint8_t *put_address(struct trace_stream *stream, uint8_t *at, uintptr_t address)
{
    at = put_sv(at, (int64_t)(address - stream->last_address));
    stream->last_address = address;
    return at;
}

static void put_u32(uint8_t *at, uint32_t value)
{
    for (unsigned i = 0; i < 4; i++)
        at[i] = (uint8_t)(value >> 8 * i);
}

static void put_u64(uint8_t *at, uint64_t value)
{
    for (unsigned i = 0; i < 8; i++)
        at[i] = (uint8_t)(value >> 8 * i);
}

static uint64_t monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static bool write_all(int fd, const uint8_t *bytes, size_t size)
{
    while (size) {
        ssize_t written = write(fd, bytes, size);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return false;
        bytes += written;
        size -= (size_t)written;
    }
    return true;
}

static void fail(const char *why)
{
    if (!file.failed && log_first_failure())
        log_line("cannot write the trace ", file.output.path, ": ", why, NULL);
    file.failed = true;
}

/* The file with its header, and the compressor; the file's lock held. */
static bool ready(void)
{
    if (file.failed || file.finished)
        return false;
    if (file.created)
        return true;
    int saved_errno = errno;
    if (!file.compressor) {
        size_t workspace_size =
            ZSTD_estimateCCtxSize_usingCParams(ZSTD_getCParams(TRACE_ZSTD_LEVEL, TRACE_STREAM_SIZE, 0));
        void *workspace = region_map(workspace_size);
        file.compressed_capacity = ZSTD_compressBound(TRACE_STREAM_SIZE);
        file.compressed = region_map(file.compressed_capacity);
        file.compressor = workspace ? ZSTD_initStaticCCtx(workspace, workspace_size) : NULL;
    }
    if (!file.compressor || !file.compressed) {
        fail("out of memory");
        errno = saved_errno;
        return false;
    }
    int fd = output_open(&file.output, monitor.options.trace, monitor.pid, monitor.is_root);
    if (fd < 0) {
        file.failed = true; /* output_open said why */
        errno = saved_errno;
        return false;
    }
    uint8_t header[TRACE_HEADER_SIZE] = {0};
    memcpy(header, TRACE_MAGIC, 8);
    header[8] = TRACE_VERSION;
    header[10] = TRACE_HEADER_SIZE;
    put_u32(header + 12, (uint32_t)monitor.pid);
    put_u64(header + 16, monitor.start_unix_ns);
    put_u64(header + 24, monitor.start_monotonic_ns);
    put_u64(header + 32, monitor.start_tsc);
    bool written = write_all(fd, header, sizeof header);
    close(fd);
    file.created = true;
    if (!written)
        fail(strerrordesc_np(errno));
    errno = saved_errno;
    return written;
}

/* Appends one block; the file's lock held. */
static void write_block(uint32_t kind, uint32_t thread, uint32_t raw_size, const uint8_t *stored,
                        uint32_t stored_size)
{
    int saved_errno = errno;
    uint8_t header[TRACE_BLOCK_HEADER_SIZE];
    put_u32(header, kind);
    put_u32(header + 4, thread);
    put_u32(header + 8, raw_size);
    put_u32(header + 12, stored_size);
    put_u64(header + 16, __rdtsc());
    put_u64(header + 24, monotonic_ns());
    int fd = output_reopen(&file.output);
    if (fd < 0 || !write_all(fd, header, sizeof header) || !write_all(fd, stored, stored_size))
        fail(strerrordesc_np(errno));
    if (fd >= 0)
        close(fd);
    errno = saved_errno;
}

/* Writes the stream's buffer out as a block and empties it; the state's
 * lock held. */
static void flush(struct trace_stream *stream, bool bounded)
{
    if (!stream->used)
        return;
    if (spin_lock_within(&file.lock, bounded)) {
        if (ready()) {
            size_t stored = ZSTD_compressCCtx(file.compressor, file.compressed, file.compressed_capacity,
                                              stream->events, stream->used, TRACE_ZSTD_LEVEL);
            if (ZSTD_isError(stored)) {
                fail(ZSTD_getErrorName(stored));
            } else {
                write_block(TRACE_BLOCK_EVENTS, stream->thread, stream->used, file.compressed, (uint32_t)stored);
                file.events_written += stream->count;
            }
        }
        spin_unlock(&file.lock);
    }
    stream->used = 0;
    stream->count = 0;
}

/* Where the next event goes, with its op, sequence and time put; NULL when
 * out of memory. */
static uint8_t *begin(struct trace_stream *stream, unsigned op, uint64_t sequence)
{
    if (unlikely(!stream->events)) {
        stream->events = region_map(TRACE_STREAM_SIZE);
        if (!stream->events)
            return NULL;
    }
    if (unlikely(!stream->numbered)) {
        stream->thread = atomic_fetch_add_explicit(&next_stream_number, 1, memory_order_relaxed);
        stream->numbered = true;
        stream->last_sequence = 0;
        stream->last_tsc = monitor.start_tsc;
        stream->last_address = 0;
    }
    if (unlikely(stream->used > TRACE_STREAM_SIZE - TRACE_EVENT_MAX))
        flush(stream, false);
    uint8_t *at = stream->events + stream->used;
    *at++ = (uint8_t)op;
    at = put_sv(at, (int64_t)(sequence - stream->last_sequence));
    stream->last_sequence = sequence;
    uint64_t tsc = __rdtsc();
    at = put_sv(at, (int64_t)(tsc - stream->last_tsc));
    stream->last_tsc = tsc;
    return at;
}

static inline void end(struct trace_stream *stream, const uint8_t *at)
{
    stream->used = (uint32_t)(at - stream->events);
    stream->count++;
}

void trace_allocation(struct trace_stream *stream, uint64_t sequence, unsigned function, uint64_t size,
                      uint64_t alignment, uintptr_t address, uint32_t path)
{
    uint8_t *at = begin(stream, TRACE_OP_ALLOC, sequence);
    if (unlikely(!at))
        return;
    at = put_uv(at, function);
    at = put_uv(at, size);
    at = put_uv(at, alignment);
    at = put_address(stream, at, address);
    at = put_uv(at, path);
    end(stream, at);
}

void trace_free(struct trace_stream *stream, uint64_t sequence, unsigned function, uintptr_t address)
{
    uint8_t *at = begin(stream, TRACE_OP_FREE, sequence);
    if (unlikely(!at))
        return;
    at = put_uv(at, function);
    at = put_address(stream, at, address);
    end(stream, at);
}

void trace_realloc(struct trace_stream *stream, uint64_t sequence, uint64_t later, uint64_t size,
                   uintptr_t old_address, uintptr_t address, uint32_t path)
{
    uint8_t *at = begin(stream, TRACE_OP_REALLOC, sequence);
    if (unlikely(!at))
        return;
    at = put_uv(at, MPROF_SUM_REALLOC_CALLS);
    at = put_uv(at, later);
    at = put_uv(at, size);
    at = put_address(stream, at, old_address);
    at = put_address(stream, at, address);
    at = put_uv(at, path);
    end(stream, at);
}

static void flush_state(struct thread_state *state, void *bounded)
{
    flush(&state->trace, *(bool *)bounded);
}

void trace_finish(bool bounded)
{
    if (!trace_enabled)
        return;
    thread_states_each(flush_state, &bounded, bounded);
    if (!spin_lock_within(&file.lock, bounded))
        return;
    if (ready()) {
        uint8_t end_values[16];
        put_u64(end_values, file.events_written);
        put_u64(end_values + 8, atomic_load(&next_sequence) - 1);
        write_block(TRACE_BLOCK_END, 0, 0, end_values, sizeof end_values);
    }
    if (file.created) {
        int fd = output_reopen(&file.output);
        if (fd >= 0) {
            if (output_commit(&file.output, fd, !file.failed))
                runlog_wrote("trace", file.output.path);
        } else
            unlink(file.output.temporary);
    }
    file.finished = true;
    spin_unlock(&file.lock);
}

void trace_stream_forget(struct trace_stream *stream)
{
    stream->used = 0;
    stream->count = 0;
    stream->numbered = false;
}

void trace_fork_prepare(void)
{
    if (trace_enabled)
        spin_lock(&file.lock);
}

void trace_fork_parent(void)
{
    if (trace_enabled)
        spin_unlock(&file.lock);
}

void trace_fork_child(void)
{
    if (!trace_enabled)
        return;
    /* The parent's file is the parent's to finish; the compressor and its
     * buffer are reused. */
    file.output = (struct output){0};
    file.created = false;
    file.failed = false;
    file.finished = false;
    file.events_written = 0;
    atomic_store(&next_sequence, 1);
    atomic_store(&next_stream_number, 0);
    spin_unlock(&file.lock);
}
