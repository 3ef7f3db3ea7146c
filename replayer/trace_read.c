/* Decoding a trace (trace_read.h): the header, each block's zstd frame,
 * and the varints of its events, with every length checked before it is
 * trusted, the file read as it is decoded. */
#include "trace_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "replay.h"

#define TRACE_HEADER_SIZE 64
#define BLOCK_HEADER_SIZE 32
#define MAX_THREADS (1u << 20)
/* The largest raw size of a block a reader takes (mprof(5)); the monitor
 * writes at most 128 KiB. */
#define MAX_RAW_SIZE (16u << 20)
#define READ_CHUNK ((size_t)1 << 20)

struct cursor {
    const char *path;
    const uint8_t *at, *end;
    uint64_t block; /* for messages */
};

static uint64_t le(const uint8_t *at, unsigned bytes)
{
    uint64_t value = 0;
    for (unsigned i = 0; i < bytes; i++)
        value |= (uint64_t)at[i] << 8 * i;
    return value;
}

static uint64_t uv(struct cursor *c)
{
    uint64_t value = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (c->at == c->end)
            fail(2, c->path, "block %llu: an event is cut short", (unsigned long long)c->block);
        uint8_t byte = *c->at++;
        if (shift == 63 && byte > 1)
            break;
        value |= (uint64_t)(byte & 0x7f) << shift;
        if (byte < 0x80)
            return value;
    }
    fail(2, c->path, "block %llu: a number does not fit in 64 bits", (unsigned long long)c->block);
}

static int64_t sv(struct cursor *c)
{
    uint64_t value = uv(c);
    return (int64_t)(value >> 1) ^ -(int64_t)(value & 1);
}

/* Where each thread's stream stands between its blocks. */
struct stream {
    uint64_t sequence, tsc, address;
};

/* The trace as it is read: a piece at a time, so that what is held grows
 * with the bytes that arrive and each size the file states is judged (by a
 * regular file's size, by what the format allows) before it is trusted. */
struct input {
    const char *path;
    FILE *file;
    int regular;
    uint64_t size;   /* a regular file's, from fstat */
    uint64_t offset; /* bytes read so far */
};

/* Reads up to count bytes; fewer only where the file ends. */
static size_t input_read(struct input *in, void *to, size_t count)
{
    size_t got = fread(to, 1, count, in->file);
    if (got < count && ferror(in->file))
        fail(2, in->path, "%s", strerror(errno));
    in->offset += got;
    return got;
}

/* A block's stored bytes, into *buffer (grown as they arrive, never past
 * count); the bytes read, fewer than count only where the file ends. */
static size_t input_read_grown(struct input *in, uint8_t **buffer, size_t *capacity, size_t count)
{
    size_t got = 0;
    while (got < count) {
        size_t want = count - got < READ_CHUNK ? count - got : READ_CHUNK;
        if (got + want > *capacity) {
            size_t grown = *capacity * 2 > got + want ? *capacity * 2 : got + want;
            *capacity = grown < count ? grown : count;
            *buffer = realloc(*buffer, *capacity);
            if (!*buffer)
                fail(2, in->path, "out of memory");
        }
        size_t read = input_read(in, *buffer + got, want);
        got += read;
        if (read < want)
            break;
    }
    return got;
}

static void decode_events(struct cursor *c, uint32_t thread, struct stream *stream, struct trace *trace,
                          size_t *capacity)
{
    while (c->at < c->end) {
        if (trace->count == *capacity) {
            *capacity *= 2;
            trace->events = realloc(trace->events, *capacity * sizeof *trace->events);
            if (!trace->events)
                fail(2, c->path, "out of memory");
        }
        struct traced_event *e = &trace->events[trace->count];
        memset(e, 0, sizeof *e);
        e->thread = thread;
        e->op = *c->at++;
        stream->sequence += (uint64_t)sv(c);
        stream->tsc += (uint64_t)sv(c);
        e->sequence = stream->sequence;
        e->tsc = stream->tsc;
        uint64_t function = uv(c);
        if (function < 6 || function > 12)
            fail(2, c->path, "block %llu: unknown function %llu", (unsigned long long)c->block,
                 (unsigned long long)function);
        e->function = (uint8_t)function;
        /* Which functions each op may come from (mprof(5)). */
        int allowed = e->op == 1 ? function <= 10 : e->op == 2 ? function == 8 || function >= 11 : function == 8;
        if (!allowed)
            fail(2, c->path, "block %llu: event %u from function %llu", (unsigned long long)c->block, e->op,
                 (unsigned long long)function);
        switch (e->op) {
        case 1:
            e->size = uv(c);
            e->alignment = uv(c);
            e->address = stream->address += (uint64_t)sv(c);
            uv(c); /* path */
            break;
        case 2:
            e->address = stream->address += (uint64_t)sv(c);
            break;
        case 3:
            e->later = uv(c);
            e->size = uv(c);
            e->old_address = stream->address += (uint64_t)sv(c);
            e->address = stream->address += (uint64_t)sv(c);
            uv(c);
            if (e->later == 0)
                fail(2, c->path, "block %llu: a realloc returns its block before it released the old one",
                     (unsigned long long)c->block);
            break;
        default:
            fail(2, c->path, "block %llu: unknown event %u", (unsigned long long)c->block, e->op);
        }
        if (e->sequence == 0)
            fail(2, c->path, "block %llu: sequence number 0", (unsigned long long)c->block);
        /* glibc's memalign rounds an alignment up to a power of two; so
         * does the replay. */
        if (e->alignment > (UINT64_C(1) << 30))
            fail(2, c->path, "block %llu: alignment %llu", (unsigned long long)c->block,
                 (unsigned long long)e->alignment);
        while (e->alignment & (e->alignment - 1))
            e->alignment += e->alignment & -e->alignment;
        trace->count++;
    }
}

static int by_thread(const void *a, const void *b)
{
    const struct traced_event *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->sequence < y->sequence ? -1 : x->sequence > y->sequence;
}

void trace_read(const char *path, struct trace *trace)
{
    struct input in = {path, fopen(path, "rb"), 0, 0, 0};
    if (!in.file)
        fail(2, path, "%s", strerror(errno));
    struct stat status;
    if (fstat(fileno(in.file), &status) != 0)
        fail(2, path, "%s", strerror(errno));
    in.regular = S_ISREG(status.st_mode);
    in.size = in.regular ? (uint64_t)status.st_size : UINT64_MAX;
    uint8_t header[TRACE_HEADER_SIZE];
    size_t got = input_read(&in, header, sizeof header);
    if (got < 8 || memcmp(header, "MPROFTRC", 8))
        fail(2, path, "not an mprof trace (bad magic)");
    if (got < TRACE_HEADER_SIZE)
        fail(2, path, "truncated at byte %zu, in the header", got);
    if (le(header + 8, 2) != 1)
        fail(2, path, "trace format version %llu, this replayer reads 1", (unsigned long long)le(header + 8, 2));
    uint64_t header_size = le(header + 10, 2);
    if (header_size < TRACE_HEADER_SIZE || header_size > in.size)
        fail(2, path, "bad header size %llu", (unsigned long long)header_size);
    /* A longer header's fields past ours are skipped (at most 64 KiB). */
    for (uint8_t skipped[256]; in.offset < header_size;) {
        size_t want = header_size - in.offset < sizeof skipped ? (size_t)(header_size - in.offset) : sizeof skipped;
        if (input_read(&in, skipped, want) < want)
            fail(2, path, "bad header size %llu", (unsigned long long)header_size);
    }
    uint64_t start_ns = le(header + 24, 8), start_tsc = le(header + 32, 8);
    uint64_t clock_tsc = start_tsc, clock_ns = start_ns;

    size_t capacity = 1024;
    trace->events = malloc(capacity * sizeof *trace->events);
    if (!trace->events)
        fail(2, path, "out of memory");
    trace->count = 0;
    trace->threads = 0;
    struct stream *streams = NULL;
    uint8_t *raw = NULL, *stored = NULL;
    size_t raw_capacity = 0, stored_capacity = 0;
    uint64_t block = 0, end_events = 0;
    int ended = 0;
    for (;;) {
        uint8_t h[BLOCK_HEADER_SIZE];
        got = input_read(&in, h, sizeof h);
        if (got == 0)
            break;
        block++;
        if (ended)
            fail(2, path, "block %llu follows the end block", (unsigned long long)block);
        if (got < BLOCK_HEADER_SIZE)
            fail(2, path, "truncated at byte %llu, in block %llu's header", (unsigned long long)in.offset,
                 (unsigned long long)block);
        uint32_t kind = (uint32_t)le(h, 4), thread = (uint32_t)le(h + 4, 4);
        uint64_t raw_size = le(h + 8, 4), stored_size = le(h + 12, 4);
        if (stored_size > in.size - in.offset)
            fail(2, path, "truncated at byte %llu, in block %llu", (unsigned long long)in.size,
                 (unsigned long long)block);
        if (kind == 2 && stored_size != 16)
            fail(2, path, "block %llu: an end block of %llu bytes", (unsigned long long)block,
                 (unsigned long long)stored_size);
        if (kind != 1 && kind != 2)
            fail(2, path, "block %llu: unknown kind %u", (unsigned long long)block, kind);
        /* Each thread has a block of its own, so a regular file holds
         * fewer threads than blocks' headers. */
        if (kind == 1 && (thread >= MAX_THREADS || thread >= in.size / BLOCK_HEADER_SIZE))
            fail(2, path, "block %llu: thread %u", (unsigned long long)block, thread);
        if (kind == 1 && raw_size > MAX_RAW_SIZE)
            fail(2, path, "block %llu: a raw size of %llu bytes, more than %u", (unsigned long long)block,
                 (unsigned long long)raw_size, MAX_RAW_SIZE);
        if (kind == 1 && stored_size > ZSTD_compressBound(raw_size))
            fail(2, path, "block %llu: %llu bytes stored for %llu raw", (unsigned long long)block,
                 (unsigned long long)stored_size, (unsigned long long)raw_size);
        if (input_read_grown(&in, &stored, &stored_capacity, stored_size) < stored_size)
            fail(2, path, "truncated at byte %llu, in block %llu", (unsigned long long)in.offset,
                 (unsigned long long)block);
        if (le(h + 16, 8) > start_tsc && le(h + 24, 8) > start_ns) {
            clock_tsc = le(h + 16, 8);
            clock_ns = le(h + 24, 8);
        }
        if (kind == 2) {
            end_events = le(stored, 8);
            ended = 1;
            continue;
        }
        if (thread >= trace->threads) {
            streams = realloc(streams, (thread + 1) * sizeof *streams);
            if (!streams)
                fail(2, path, "out of memory");
            for (uint32_t t = trace->threads; t <= thread; t++)
                streams[t] = (struct stream){0, start_tsc, 0};
            trace->threads = thread + 1;
        }
        if (raw_size > raw_capacity) {
            raw_capacity = raw_size;
            raw = realloc(raw, raw_capacity);
            if (!raw)
                fail(2, path, "out of memory");
        }
        size_t decompressed = ZSTD_decompress(raw, raw_size, stored, stored_size);
        if (ZSTD_isError(decompressed) || decompressed != raw_size)
            fail(2, path, "block %llu: corrupt zstd frame (%s)", (unsigned long long)block,
                 ZSTD_isError(decompressed) ? ZSTD_getErrorName(decompressed) : "wrong size");
        struct cursor cursor = {path, raw, raw + raw_size, block};
        decode_events(&cursor, thread, &streams[thread], trace, &capacity);
    }
    fclose(in.file);
    if (!ended)
        fail(2, path, "no end block: the trace was cut short");
    if (end_events != trace->count)
        fail(2, path, "the end block counts %llu events, the blocks hold %zu", (unsigned long long)end_events,
             trace->count);
    qsort(trace->events, trace->count, sizeof *trace->events, by_thread);
    uint64_t first = UINT64_MAX, last = 0;
    for (size_t i = 0; i < trace->count; i++) {
        first = trace->events[i].tsc < first ? trace->events[i].tsc : first;
        last = trace->events[i].tsc > last ? trace->events[i].tsc : last;
    }
    double ns_per_tick = clock_tsc > start_tsc ? (double)(clock_ns - start_ns) / (double)(clock_tsc - start_tsc) : 0;
    trace->duration_ns = trace->count ? (uint64_t)((double)(last - first) * ns_per_tick) : 0;
    free(raw);
    free(stored);
    free(streams);
}
