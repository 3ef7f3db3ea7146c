/* The buffered little-endian file writer of writer.h. */
#include "writer.h"

#include <errno.h>
#include <unistd.h>

static uint32_t crc_table[256];

static void make_crc_table(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static void flush(struct writer *writer)
{
    size_t done = 0;
    while (done < writer->used && !writer->failed) {
        ssize_t wrote = write(writer->fd, writer->buffer + done, writer->used - done);
        if (wrote > 0)
            done += (size_t)wrote;
        else if (wrote < 0 && errno != EINTR) {
            writer->failed = true;
            writer->errno_value = errno;
        }
    }
    writer->used = 0;
}

void writer_start(struct writer *writer, int fd)
{
    if (!crc_table[1])
        make_crc_table(); /* idempotent, so a race between writers is harmless */
    writer->fd = fd;
    writer->failed = false;
    writer->errno_value = 0;
    writer->crc = 0xFFFFFFFFu;
    writer->offset = 0;
    writer->used = 0;
}

void writer_bytes(struct writer *writer, const void *bytes, size_t size)
{
    const unsigned char *in = bytes;
    uint32_t crc = writer->crc;
    for (size_t i = 0; i < size; i++)
        crc = crc_table[(crc ^ in[i]) & 0xFF] ^ (crc >> 8);
    writer->crc = crc;
    writer->offset += size;
    while (size) {
        if (writer->used == sizeof writer->buffer)
            flush(writer);
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
    return writer->crc ^ 0xFFFFFFFFu;
}

bool writer_finish(struct writer *writer)
{
    flush(writer);
    return !writer->failed;
}
