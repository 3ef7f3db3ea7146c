"""Writes mprof data files by hand, straight from mprof(5), for the tests.

Deliberately shares no code with the reader, so that a misreading of the man
page in one does not hide in the other.  Every field is a knob, and a few
extra knobs produce the damaged files the reader must refuse.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

ORDER = ["PROG", "MODS", "SUMM", "BINS", "SITE", "LEAK", "PAIR", "END"]
SUMMARY_FIELDS = 22


@dataclass
class ModuleSpec:
    bias: int
    start: int
    end: int
    flags: int = 0
    build_id: bytes = b""
    path: bytes = b""


@dataclass
class DataFileBuilder:
    magic: bytes = b"MPROFDAT"
    version: int = 1
    header_size: int = 64
    flags: int = 0x3  # call graph, final
    stack_depth: int = 16
    leak_depth: int = 4
    pid: int = 4242
    ppid: int = 1
    start_unix_ns: int = 1_700_000_000_123_456_789
    elapsed_ns: int = 2_500_000_000
    section_count: int | None = None  # None: as many as are written
    header_reserved: tuple[int, int] = (0, 0)

    exe: bytes = b"/usr/bin/prog"
    cmdline: bytes = b"prog\0--flag\0"
    modules: list[ModuleSpec] = field(default_factory=list)
    summary: list[int] = field(default_factory=lambda: [0] * SUMMARY_FIELDS)
    # (size, allocs, frees, bytes, bytes_freed)
    bins: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    # (addr, calls, frees, bytes[4], freed[4])
    sites: list[tuple[int, int, int, tuple[int, ...], tuple[int, ...]]] = field(
        default_factory=list
    )
    # (addrs, allocs, frees, bytes, bytes_freed); addrs are padded with zeros
    # to leak_depth, never cut
    leaks: list[tuple[tuple[int, ...], int, int, int, int]] = field(default_factory=list)
    # (caller, callee, calls, bytes[4])
    pairs: list[tuple[int, int, int, tuple[int, ...]]] = field(default_factory=list)

    # Damage knobs.
    order: list[str] = field(default_factory=lambda: list(ORDER))
    count_override: dict[str, int] = field(default_factory=dict)
    payload_override: dict[str, bytes] = field(default_factory=dict)
    extra_payload: dict[str, bytes] = field(default_factory=dict)
    size_override: dict[str, int] = field(default_factory=dict)
    section_reserved: dict[str, int] = field(default_factory=dict)
    crc: int | None = None  # None: the right one
    end_reserved: int = 0
    trailing: bytes = b""

    def _count(self, tag: str, real: int) -> bytes:
        return struct.pack("<Q", self.count_override.get(tag, real))

    def _payload(self, tag: str) -> bytes:
        if tag in self.payload_override:
            return self.payload_override[tag]
        # bytearray: appending to bytes would copy the whole payload each time.
        out = bytearray()
        if tag == "PROG":
            out += struct.pack("<I", len(self.exe)) + self.exe
            out += struct.pack("<I", len(self.cmdline)) + self.cmdline
        elif tag == "MODS":
            out += self._count(tag, len(self.modules))
            for m in self.modules:
                out += struct.pack(
                    "<QQQBBH", m.bias, m.start, m.end, m.flags, len(m.build_id), len(m.path)
                )
                out += m.build_id + m.path
        elif tag == "SUMM":
            out += self._count(tag, len(self.summary))
            out += b"".join(struct.pack("<Q", v) for v in self.summary)
        elif tag == "BINS":
            out += self._count(tag, len(self.bins))
            out += b"".join(struct.pack("<IQQQQ", *b) for b in self.bins)
        elif tag == "SITE":
            out += self._count(tag, len(self.sites))
            for addr, calls, frees, by_class, freed_by_class in self.sites:
                out += struct.pack("<QQQ4Q4Q", addr, calls, frees, *by_class, *freed_by_class)
        elif tag == "LEAK":
            out += self._count(tag, len(self.leaks))
            for addrs, allocs, frees, nbytes, freed in self.leaks:
                padded = tuple(addrs) + (0,) * max(0, self.leak_depth - len(addrs))
                out += struct.pack(f"<{len(padded)}Q", *padded)
                out += struct.pack("<QQQQ", allocs, frees, nbytes, freed)
        elif tag == "PAIR":
            out += self._count(tag, len(self.pairs))
            for caller, callee, calls, by_class in self.pairs:
                out += struct.pack("<QQQ4Q", caller, callee, calls, *by_class)
        return bytes(out + self.extra_payload.get(tag, b""))

    def _header(self, sections: int) -> bytes:
        count = sections if self.section_count is None else self.section_count
        return struct.pack(
            "<8sHHIIIIIQQIIQ",
            self.magic,
            self.version,
            self.header_size,
            self.flags,
            self.stack_depth,
            self.leak_depth,
            self.pid,
            self.ppid,
            self.start_unix_ns,
            self.elapsed_ns,
            count,
            *self.header_reserved,
        )

    def build_layout(self) -> tuple[bytes, dict[str, int]]:
        """The file, and the offset of each section's header in it."""
        out = bytearray(self._header(len(self.order)))
        offsets: dict[str, int] = {}
        for name in self.order:
            offsets[name] = len(out)
            tag = name.ljust(4).encode("ascii")
            if name == "END":
                crc = zlib.crc32(bytes(out)) if self.crc is None else self.crc
                payload = struct.pack("<II", crc, self.end_reserved)
            else:
                payload = self._payload(name)
            size = self.size_override.get(name, len(payload))
            out += struct.pack("<4sIQ", tag, self.section_reserved.get(name, 0), size)
            out += payload
        out += self.trailing
        return bytes(out), offsets

    def build(self) -> bytes:
        return self.build_layout()[0]
