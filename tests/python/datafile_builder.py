"""Writes mprof data files by hand, straight from mprof(5), for the tests.

Deliberately shares no code with the reader, so that a misreading of the man
page in one does not hide in the other.  Every field is a knob, and a few
extra knobs produce the damaged files the reader must refuse.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

ORDER = ["PROG", "MODS", "SUMM", "BINS", "ADDR", "NODE", "PATH", "TIME", "POOL", "END"]
PATH_FIELDS = 13
LEAK_FIELDS = 8
SUMMARY_FIELDS = 39


def uv(value: int) -> bytes:
    """Unsigned LEB128 in the fewest bytes, as the monitor writes it, so that
    the format agreement test can compare files byte for byte."""
    if value < 0:
        raise ValueError(f"uv of a negative value {value}")
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if not value:
            out.append(low)
            return bytes(out)
        out.append(low | 0x80)


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
    version: int = 7
    header_size: int = 64
    flags: int = 0x3  # call graph, final
    # Flag 16 set and the sections deflated at this zlib level (None: as
    # they are).  build_layout() gives the file before deflating.
    compress_level: int | None = None
    stack_depth: int = 16
    leak_depth: int = 4
    pid: int = 4242
    ppid: int = 1
    start_unix_ns: int = 1_700_000_000_123_456_789
    elapsed_ns: int = 2_500_000_000
    section_count: int | None = None  # None: as many as are written
    end_signal: int = 0
    header_reserved: int = 0

    exe: bytes = b"/usr/bin/prog"
    cmdline: bytes = b"prog\0--flag\0"
    lsan_suppressions: bytes = b""
    refused_settings: bytes = b""  # NAME=VALUE entries, each ended by a NUL
    modules: list[ModuleSpec] = field(default_factory=list)
    summary: list[int] = field(default_factory=lambda: [0] * SUMMARY_FIELDS)
    # (size, allocs, frees, bytes, bytes_freed)
    bins: list[tuple[int, ...]] = field(default_factory=list)
    # Addresses below are raw; the builder writes them as indices into the
    # ADDR table it builds from every address the nodes use.
    # (addrs, allocs, frees, bytes[4], freed[4]): addrs innermost first,
    # each path made of nodes interned outermost first, in the order given,
    # so parents come first; with nodes given, addrs is the node's
    # reference instead (0: the empty path, else its index + 1).
    # Then, optionally: temporaries, blocks and bytes live at the peak.
    paths: list[tuple] = field(default_factory=list)
    # The NODE entries as written, (up, addr); None: made from the paths.
    nodes: list[tuple[int, int]] | None = None
    path_fields: int = PATH_FIELDS  # the F written in PATH
    # (ns from the start, live bytes, live blocks, resident bytes[, mapped bytes: 0]), oldest first
    timeline: list[tuple[int, ...]] = field(default_factory=list)
    path_extra: tuple[int, ...] = ()  # values written after each path's known ones
    # The pool frames: (creator, name), by index.
    pools: list[tuple[int, bytes]] = field(default_factory=list)
    # LEAK, written before END when given: (flags, threads stopped, threads
    # not stopped, root bytes, block bytes, scan ns), and its entries, (path
    # index, definite blocks, definite bytes, indirect ..., reachable bytes).
    leak: tuple[int, int, int, int, int, int] | None = None
    leak_entries: list[tuple[int, ...]] = field(default_factory=list)
    leak_fields: int = LEAK_FIELDS  # the F written in LEAK
    leak_extra: tuple[int, ...] = ()  # values written after each entry's known ones

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
    # The ADDR table as written, in this order; None: the sorted distinct
    # addresses used, as mprof(5) says.  Each is written as its difference
    # from the one before, so the list must not decrease.
    addresses: list[int] | None = None
    # The index written for a raw address, instead of its place in the table.
    index_override: dict[int, int] = field(default_factory=dict)

    def tree(self) -> tuple[list[tuple[int, int]], list[int]]:
        """The NODE entries (up, addr) and each path's node reference."""
        if self.nodes is not None:
            return self.nodes, [int(path[0]) for path in self.paths]
        nodes: list[tuple[int, int]] = []
        index: dict[tuple[int, int], int] = {}  # (parent index or -1, addr) -> index
        refs = []
        for path in self.paths:
            addrs = path[0]
            assert isinstance(addrs, tuple)
            parent = -1
            for addr in reversed(addrs):
                if (parent, addr) not in index:
                    index[(parent, addr)] = len(nodes)
                    nodes.append((len(nodes) - parent if parent >= 0 else 0, addr))
                parent = index[(parent, addr)]
            refs.append(parent + 1)
        return nodes, refs

    def used_addresses(self) -> list[int]:
        """Every address that NODE refers to, sorted, once each."""
        return sorted({addr for _, addr in self.tree()[0]})

    def _table(self) -> list[int]:
        return self.used_addresses() if self.addresses is None else self.addresses

    def _indices(self, table: list[int]) -> dict[int, int]:
        # Reversed so that in a table given by hand with repeats the first
        # one wins.  A dict, not table.index(): the format agreement test
        # rebuilds real files with thousands of addresses.
        indices = {addr: i for i, addr in reversed(list(enumerate(table)))}
        return indices | self.index_override

    def _count(self, tag: str, real: int) -> bytes:
        return struct.pack("<Q", self.count_override.get(tag, real))

    def _payload(self, tag: str, table: list[int], indices: dict[int, int]) -> bytes:
        if tag in self.payload_override:
            return self.payload_override[tag]

        def index(addr: int) -> bytes:
            return uv(indices[addr])

        # bytearray: appending to bytes would copy the whole payload each time.
        out = bytearray()
        if tag == "PROG":
            out += struct.pack("<I", len(self.exe)) + self.exe
            out += struct.pack("<I", len(self.cmdline)) + self.cmdline
            out += struct.pack("<I", len(self.lsan_suppressions)) + self.lsan_suppressions
            out += struct.pack("<I", len(self.refused_settings)) + self.refused_settings
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
            # (size, allocs, frees, bytes, bytes freed[, temporaries, peak blocks, peak bytes])
            out += b"".join(struct.pack("<IQQQQQQQ", *b, *(0,) * (8 - len(b))) for b in self.bins)
        elif tag == "ADDR":
            out += self._count(tag, len(table))
            # The first is the address itself, as its difference from 0.
            for previous, addr in zip([0, *table], table, strict=False):
                out += uv(addr - previous)
        elif tag == "NODE":
            nodes, _ = self.tree()
            out += self._count(tag, len(nodes))
            for up, addr in nodes:
                out += uv(up) + index(addr)
        elif tag == "PATH":
            _, refs = self.tree()
            out += self._count(tag, len(self.paths))
            out += struct.pack("<Q", self.path_fields)
            for ref, (_, allocs, frees, by_class, freed_by_class, *rest) in zip(refs, self.paths, strict=True):
                # rest: temporaries, blocks and bytes at the peak, 0 when not given
                values = (ref, allocs, frees, *by_class, *freed_by_class, *rest, *(0,) * (3 - len(rest)))
                out += b"".join(uv(v) for v in (*values, *self.path_extra))
        elif tag == "TIME":
            out += self._count(tag, len(self.timeline))
            times = [0, *(p[0] for p in self.timeline)]
            for previous, (ns, live, blocks, resident, *mapped) in zip(times, self.timeline, strict=False):
                out += b"".join(uv(v) for v in (ns - previous, live, blocks, resident, *(mapped or [0])))
        elif tag == "POOL":
            out += self._count(tag, len(self.pools))
            for creator, name in self.pools:
                out += struct.pack("<QH", creator, len(name)) + name
        elif tag == "LEAK":
            assert self.leak is not None
            out += struct.pack("<6Q", *self.leak)
            out += self._count(tag, len(self.leak_entries))
            out += struct.pack("<Q", self.leak_fields)
            for entry in self.leak_entries:
                out += b"".join(uv(v) for v in (*entry, *self.leak_extra))
        return bytes(out + self.extra_payload.get(tag, b""))

    def _header(self, sections: int) -> bytes:
        count = sections if self.section_count is None else self.section_count
        return struct.pack(
            "<8sHHIIIIIQQIIQ",
            self.magic,
            self.version,
            self.header_size,
            self.flags | (0x10 if self.compress_level is not None else 0),
            self.stack_depth,
            self.leak_depth,
            self.pid,
            self.ppid,
            self.start_unix_ns,
            self.elapsed_ns,
            count,
            self.end_signal,
            self.header_reserved,
        )

    def build_layout(self) -> tuple[bytes, dict[str, int]]:
        """The file, and the offset of each section's header in it; a
        compressed file as it is before its sections are deflated."""
        order = self.order
        if self.leak is not None and "LEAK" not in order:
            order = [*order[:-1], "LEAK", *order[-1:]]
        out = bytearray(self._header(len(order)))
        table = self._table()
        indices = self._indices(table)
        offsets: dict[str, int] = {}
        for name in order:
            offsets[name] = len(out)
            tag = name.ljust(4).encode("ascii")
            if name == "END":
                crc = zlib.crc32(bytes(out)) if self.crc is None else self.crc
                payload = struct.pack("<II", crc, self.end_reserved)
            else:
                payload = self._payload(name, table, indices)
            size = self.size_override.get(name, len(payload))
            out += struct.pack("<4sIQ", tag, self.section_reserved.get(name, 0), size)
            out += payload
        out += self.trailing
        return bytes(out), offsets

    def build(self) -> bytes:
        data = self.build_layout()[0]
        if self.compress_level is None:
            return data
        # The header as it is; the sections and what trails them, one stream.
        return data[:64] + zlib.compress(data[64:], self.compress_level)
