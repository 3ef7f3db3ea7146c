/* Little-endian fields into a file descriptor through a fixed buffer, with
 * a running CRC-32, the bytes after the first few deflated into one zlib
 * stream; no stdio, no malloc. */
#ifndef MPROF_WRITER_H
#define MPROF_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

struct writer {
    int fd;
    bool failed;     /* a write(2) or deflate failed; errno_value says why */
    int errno_value;
    uint32_t crc;    /* of every byte put so far, pre-inverted as zlib keeps it */
    uint64_t offset; /* bytes put so far */
    uint64_t plain;  /* of the bytes put, how many more go out as they are */
    bool deflating;  /* stream is open: every byte past the plain ones goes through it */
    z_stream stream; /* its memory from region_map (arena.h), never malloc */
    size_t used;
    unsigned char buffer[64 * 1024];   /* bytes put, not yet written or deflated */
    unsigned char deflated[64 * 1024]; /* the stream's output, written as it fills */
};

/* Ready to write to fd: the first plain bytes put go out as they are, every
 * byte after them through one zlib stream (RFC 1950) at level 1 to 9 (0:
 * none), which writer_finish ends.  False when zlib's state cannot be
 * mapped: then nothing is held and nothing may be put. */
bool writer_start(struct writer *writer, int fd, uint64_t plain, int level);
void writer_bytes(struct writer *writer, const void *bytes, size_t size);
void writer_u8(struct writer *writer, uint8_t value);
void writer_u16(struct writer *writer, uint16_t value);
void writer_u32(struct writer *writer, uint32_t value);
void writer_u64(struct writer *writer, uint64_t value);
/* Unsigned LEB128, the fewest bytes that hold value. */
void writer_uv(struct writer *writer, uint64_t value);
unsigned uv_size(uint64_t value);
/* The CRC-32 of everything put so far, as zlib.crc32 computes it: of the
 * bytes as they were put, before any were deflated. */
uint32_t writer_crc(const struct writer *writer);
/* Flushes the buffer and ends the stream, releasing its memory; false if
 * any write failed. */
bool writer_finish(struct writer *writer);

#endif
