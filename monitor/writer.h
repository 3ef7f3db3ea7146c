/* Little-endian fields into a file descriptor through a fixed buffer, with
 * a running CRC-32; no stdio, no malloc. */
#ifndef MPROF_WRITER_H
#define MPROF_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct writer {
    int fd;
    bool failed;     /* a write(2) failed; errno_value says why */
    int errno_value;
    uint32_t crc;    /* of every byte put so far, pre-inverted as zlib keeps it */
    uint64_t offset; /* bytes put so far */
    size_t used;
    unsigned char buffer[64 * 1024];
};

void writer_start(struct writer *writer, int fd);
void writer_bytes(struct writer *writer, const void *bytes, size_t size);
void writer_u8(struct writer *writer, uint8_t value);
void writer_u16(struct writer *writer, uint16_t value);
void writer_u32(struct writer *writer, uint32_t value);
void writer_u64(struct writer *writer, uint64_t value);
/* Unsigned LEB128, the fewest bytes that hold value. */
void writer_uv(struct writer *writer, uint64_t value);
unsigned uv_size(uint64_t value);
/* The CRC-32 of everything put so far, as zlib.crc32 computes it. */
uint32_t writer_crc(const struct writer *writer);
/* Flushes the buffer; false if any write failed. */
bool writer_finish(struct writer *writer);

#endif
