/* The buffered little-endian file writer of writer.h. */
#include "writer.h"

#include <errno.h>
#include <unistd.h>

#include "arena.h"

/* zlib's memory: mapped regions, each with its size in front of it, so that
 * deflate never calls the allocator the monitor interposes. */
#define REGION_PREFIX 16 /* keeps what zlib gets 16-byte aligned */

static voidpf zlib_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    size_t bytes = (size_t)items * size + REGION_PREFIX;
    size_t *region = region_map(bytes);
    if (!region)
        return Z_NULL;
    region[0] = bytes;
    return (char *)region + REGION_PREFIX;
}

static void zlib_free(voidpf opaque, voidpf address)
{
    (void)opaque;
    size_t *region = (size_t *)((char *)address - REGION_PREFIX);
    region_unmap(region, region[0]);
}

static void write_out(struct writer *writer, const unsigned char *bytes, size_t size)
{
    size_t done = 0;
    while (done < size && !writer->failed) {
        ssize_t wrote = write(writer->fd, bytes + done, size - done);
        if (wrote > 0)
            done += (size_t)wrote;
        else if (wrote < 0 && errno != EINTR) {
            writer->failed = true;
            writer->errno_value = errno;
        }
    }
}

/* Deflates next_in, all of it (Z_NO_FLUSH) or to the stream's end
 * (Z_FINISH), writing the output as each buffer of it fills. */
static void deflate_out(struct writer *writer, int flush)
{
    z_stream *stream = &writer->stream;
    for (;;) {
        stream->next_out = writer->deflated;
        stream->avail_out = sizeof writer->deflated;
        int status = deflate(stream, flush);
        if (status == Z_STREAM_ERROR) { /* only a state the writer never makes */
            writer->failed = true;
            writer->errno_value = EINVAL;
            return;
        }
        write_out(writer, writer->deflated, sizeof writer->deflated - stream->avail_out);
        if (writer->failed || (flush == Z_FINISH ? status == Z_STREAM_END : stream->avail_out != 0))
            return;
    }
}

/* Writes the buffer out, its CRC taken first: once per buffer, not per
 * field, is what keeps the CRC's cost small. */
static void flush(struct writer *writer, int mode)
{
    writer->crc = (uint32_t)crc32(writer->crc, writer->buffer, (uInt)writer->used);
    size_t plain = writer->plain < writer->used ? (size_t)writer->plain : writer->used;
    write_out(writer, writer->buffer, plain);
    writer->plain -= plain;
    if (writer->deflating && !writer->failed) {
        writer->stream.next_in = writer->buffer + plain;
        writer->stream.avail_in = (uInt)(writer->used - plain);
        deflate_out(writer, mode);
    } else {
        write_out(writer, writer->buffer + plain, writer->used - plain);
    }
    writer->used = 0;
}

bool writer_start(struct writer *writer, int fd, uint64_t plain, int level)
{
    writer->fd = fd;
    writer->failed = false;
    writer->errno_value = 0;
    writer->crc = 0;
    writer->offset = 0;
    writer->plain = plain;
    writer->used = 0;
    writer->deflating = false;
    if (!level)
        return true;
    writer->stream = (z_stream){.zalloc = zlib_alloc, .zfree = zlib_free};
    /* zlib's default window and memory: about 270 KB for the write. */
    if (deflateInit2(&writer->stream, level, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return false;
    writer->deflating = true;
    return true;
}

void writer_bytes(struct writer *writer, const void *bytes, size_t size)
{
    const unsigned char *in = bytes;
    writer->offset += size;
    while (size) {
        if (writer->used == sizeof writer->buffer)
            flush(writer, Z_NO_FLUSH);
        size_t room = sizeof writer->buffer - writer->used;
        size_t part = size < room ? size : room;
        for (size_t i = 0; i < part; i++)
            writer->buffer[writer->used + i] = in[i];
        writer->used += part;
        in += part;
        size -= part;
    }
}

static void put_le(struct writer *writer, uint64_t value, unsigned size)
{
    unsigned char bytes[8];
    for (unsigned i = 0; i < size; i++)
        bytes[i] = (unsigned char)(value >> (8 * i));
    writer_bytes(writer, bytes, size);
}

void writer_u8(struct writer *writer, uint8_t value) { put_le(writer, value, 1); }
void writer_u16(struct writer *writer, uint16_t value) { put_le(writer, value, 2); }
void writer_u32(struct writer *writer, uint32_t value) { put_le(writer, value, 4); }
void writer_u64(struct writer *writer, uint64_t value) { put_le(writer, value, 8); }

unsigned uv_size(uint64_t value)
{
    unsigned size = 1;
    while (value >= 0x80) {
        value >>= 7;
        size++;
    }
    return size;
}

void writer_uv(struct writer *writer, uint64_t value)
{
    unsigned char bytes[10];
    unsigned size = 0;
    do {
        unsigned char low = value & 0x7F;
        value >>= 7;
        bytes[size++] = value ? low | 0x80 : low;
    } while (value);
    writer_bytes(writer, bytes, size);
}

uint32_t writer_crc(const struct writer *writer)
{
    return (uint32_t)crc32(writer->crc, writer->buffer, (uInt)writer->used);
}

bool writer_finish(struct writer *writer)
{
    flush(writer, Z_FINISH);
    if (writer->deflating) {
        deflateEnd(&writer->stream);
        writer->deflating = false;
    }
    return !writer->failed;
}
