"""Constants of the data file format: mprof(5), mirrored in monitor/format.h."""

from __future__ import annotations

import struct
from typing import Final

MAGIC: Final = b"MPROFDAT"
VERSION: Final = 7
HEADER_SIZE: Final = 64
SECTION_HEADER_SIZE: Final = 16

FLAG_CALL_GRAPH: Final = 0x1
FLAG_FINAL: Final = 0x2
FLAG_FORKED: Final = 0x4
FLAG_CHECKPOINT: Final = 0x8
FLAG_COMPRESSED: Final = 0x10  # everything after the header is one zlib stream
FLAG_ATTACHED: Final = 0x20  # recorded from mprof attach on
KNOWN_FLAGS: Final = FLAG_CALL_GRAPH | FLAG_FINAL | FLAG_FORKED | FLAG_CHECKPOINT | FLAG_COMPRESSED | FLAG_ATTACHED

MODULE_UNLOADED: Final = 0x1
KNOWN_MODULE_FLAGS: Final = MODULE_UNLOADED

# Tags as they appear in the file: the first character is the low byte of a
# little-endian u32, so the bytes read in file order spell the name.
TAG_PROGRAM: Final = b"PROG"
TAG_MODULES: Final = b"MODS"
TAG_SUMMARY: Final = b"SUMM"
TAG_BINS: Final = b"BINS"
TAG_ADDRS: Final = b"ADDR"
TAG_NODES: Final = b"NODE"
TAG_PATHS: Final = b"PATH"
TAG_TIMELINE: Final = b"TIME"
TAG_POOLS: Final = b"POOL"
TAG_LEAKS: Final = b"LEAK"
TAG_END: Final = b"END "
SECTION_ORDER: Final = (
    TAG_PROGRAM,
    TAG_MODULES,
    TAG_SUMMARY,
    TAG_BINS,
    TAG_ADDRS,
    TAG_NODES,
    TAG_PATHS,
    TAG_TIMELINE,
    TAG_POOLS,
    TAG_END,
)
# Sections a file may leave out, each before the one named: LEAK is written
# only where the monitor classified the live blocks.
OPTIONAL_SECTIONS: Final = {TAG_LEAKS: TAG_END}

SIZE_CLASSES: Final = ("s", "m", "l", "x")
BIN_LARGE: Final = 1025
ADDRESS_MAX: Final = (1 << 64) - 1

HEADER: Final = struct.Struct("<8sHHIIIIIQQIIQ")
SECTION_HEADER: Final = struct.Struct("<4sIQ")
END_PAYLOAD: Final = struct.Struct("<II")
COUNT: Final = struct.Struct("<Q")
BIN_ENTRY: Final = struct.Struct("<IQQQQQQQ")
MODULE_FIXED: Final = struct.Struct("<QQQBBH")
POOL_FIXED: Final = struct.Struct("<QH")  # creator, name size
# A pool's objects have one more innermost frame than their call path: this
# address plus the pool frame's index in POOL, never code.
POOL_FRAME_BASE: Final = 0x800000000000
# The memory the program maps itself, counted the same way.
MMAP_FRAME: Final = POOL_FRAME_BASE + 0xFFFFFFFF
BRK_FRAME: Final = POOL_FRAME_BASE + 0xFFFFFFFE
# NODE and PATH entries are uv fields, so they have counts, not layouts.
NODE_FIELDS: Final = 2  # up, address index
TIME_FIELDS: Final = 5  # nanoseconds since the point before, live bytes, live blocks, resident bytes, mapped bytes
# allocs, frees, bytes[4], freed[4], temporaries, blocks and bytes at the peak, after the node
PATH_FIELDS: Final = 2 + 2 * len(SIZE_CLASSES) + 3
# LEAK: memcheck's kinds in format.h's order, a blocks and a bytes value each.
LEAK_KINDS: Final = ("definite", "indirect", "possible", "reachable")
LEAK_FIELDS: Final = 2 * len(LEAK_KINDS)
LEAK_FIXED: Final = struct.Struct("<QQQQQQ")  # flags, threads stopped and not, root and block bytes, ns
LEAK_THREADS_UNSTOPPED: Final = 0x1  # their stacks scanned whole, their registers not read
LEAK_UNKNOWN_ROOTS: Final = 0x2  # memory of unknown contents taken as roots
KNOWN_LEAK_FLAGS: Final = LEAK_THREADS_UNSTOPPED | LEAK_UNKNOWN_ROOTS

assert HEADER.size == HEADER_SIZE
assert SECTION_HEADER.size == SECTION_HEADER_SIZE


def tag_name(tag: bytes) -> str:
    """A tag for messages: its characters if printable, else its u32 in hex."""
    if all(0x20 <= b < 0x7F for b in tag):
        return tag.decode("ascii").rstrip(" ") or repr(tag.decode("ascii"))
    return f"0x{int.from_bytes(tag, 'little'):08x}"
