"""The values a data file holds, as immutable records.

Field meanings are those of mprof(5); nothing here is derived or resolved.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from . import format as fmt
from .core import FIGURES, Calls


@dataclass(frozen=True)
class Header:
    version: int
    flags: int
    stack_depth: int
    leak_depth: int
    pid: int
    ppid: int
    start_unix_ns: int
    elapsed_ns: int
    end_signal: int = 0  # the signal that ended the process, in a final file
    section_count: int = len(fmt.SECTION_ORDER)  # END and any optional sections included

    @property
    def call_graph(self) -> bool:
        return bool(self.flags & fmt.FLAG_CALL_GRAPH)

    @property
    def final(self) -> bool:
        return bool(self.flags & fmt.FLAG_FINAL)

    @property
    def forked(self) -> bool:
        return bool(self.flags & fmt.FLAG_FORKED)

    @property
    def checkpoint(self) -> bool:
        return bool(self.flags & fmt.FLAG_CHECKPOINT)

    @property
    def attached(self) -> bool:
        return bool(self.flags & fmt.FLAG_ATTACHED)


@dataclass(frozen=True)
class Program:
    exe: str
    # A list, not a tuple, because callers treat it like sys.argv.
    argv: list[str]
    # What its __lsan_default_suppressions returned, or "".
    lsan_suppressions: str = ""
    # The monitor's settings it did not accept (NAME=VALUE), keeping its defaults.
    refused_settings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Module:
    bias: int
    start: int
    end: int
    unloaded: bool
    build_id: bytes
    path: str


@dataclass(frozen=True)
class Summary(Mapping[str, int]):
    """SUMM values by name; also a read-only mapping so reports can loop.

    The field order is the order of the values in the file, so adding a field
    anywhere but at the end would misread every file.
    """

    allocs: int
    frees: int
    bytes_allocated: int
    bytes_freed: int
    max_live_objects: int
    max_live_bytes: int
    malloc_calls: int
    calloc_calls: int
    realloc_calls: int
    memalign_calls: int
    new_calls: int
    free_calls: int
    delete_calls: int
    free_null: int
    unknown_frees: int
    early_allocs: int
    early_frees: int
    untracked_allocs: int
    failed_allocs: int
    inherited_frees: int
    truncated_chains: int
    monitor_bytes: int
    temporary_allocs: int
    peak_ns: int
    peak_allocs: int
    pool_alloc_calls: int
    pool_free_calls: int
    pool_resets: int
    backing_blocks: int
    backing_bytes: int
    backing_frees: int
    backing_bytes_freed: int
    mmap_calls: int
    munmap_calls: int
    mremap_calls: int
    brk_calls: int
    mapped_bytes: int
    unmapped_bytes: int
    mapped_splits: int

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def __getitem__(self, name: str) -> int:
        if name not in self.field_names():
            raise KeyError(name)
        value: int = getattr(self, name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self.field_names())

    def __len__(self) -> int:
        return len(self.field_names())

    def as_dict(self) -> dict[str, int]:
        return dict(self.items())


@dataclass(frozen=True)
class Bin:
    size: int  # 0..1024, or 1025 for every size above 1024
    allocs: int
    frees: int
    bytes: int
    bytes_freed: int
    temporaries: int = 0
    peak_blocks: int = 0
    peak_bytes: int = 0


# Byte counts per size class, in the order s, m, l, x.
ClassBytes = tuple[int, int, int, int]


@dataclass(frozen=True)
class Node:
    """A call path: its parent's and one more return address."""
    parent: int  # the index of the parent node; -1: the parent is the empty path
    addr: int


@dataclass(frozen=True)
class CallPath:
    """The figures of the allocations made from one call path."""
    node: int  # the index of its innermost node; -1: the empty path (no address)
    allocs: int
    frees: int
    bytes: ClassBytes
    freed: ClassBytes
    temporaries: int = 0
    peak_blocks: int = 0
    peak_bytes: int = 0


@dataclass(frozen=True)
class PoolFrame:
    """What the program's pools of one name, made by one call, are named by."""
    creator: int  # the return address of the call that made the first, 0 for malloc-like blocks
    name: str  # as the program gave it, empty when none


@dataclass(frozen=True)
class TimePoint:
    """The memory at one moment of the run."""
    ns: int  # from the start
    live_bytes: int
    live_blocks: int
    resident_bytes: int  # the process's resident set
    mapped_bytes: int = 0  # the regions the program mapped itself


# Blocks and bytes of each leak kind, in fmt.LEAK_KINDS' order: definite
# blocks, definite bytes, indirect blocks, ... reachable bytes.
KindFigures = tuple[int, int, int, int, int, int, int, int]


@dataclass(frozen=True)
class LeakScan:
    """LEAK: how the monitor classified the live blocks as it wrote the file."""
    flags: int
    threads_stopped: int
    threads_unstopped: int
    root_bytes: int
    block_bytes: int
    scan_ns: int
    kinds: Mapping[int, KindFigures]  # by path index in PATH; paths without live blocks are absent

    @property
    def threads_unread(self) -> bool:
        return bool(self.flags & fmt.LEAK_THREADS_UNSTOPPED)

    @property
    def unknown_roots(self) -> bool:
        return bool(self.flags & fmt.LEAK_UNKNOWN_ROOTS)


@dataclass(frozen=True)
class DataFile:
    path: str
    header: Header
    program: Program
    modules: tuple[Module, ...]
    summary: Summary
    bins: tuple[Bin, ...]
    addresses: tuple[int, ...]  # the ADDR table
    calls: Calls  # the call path tree: its nodes name addresses by their index
    timeline: tuple[TimePoint, ...] = ()  # oldest first
    pools: tuple[PoolFrame, ...] = ()  # by index: a pool frame's address is POOL_FRAME_BASE + index
    leaks: LeakScan | None = None  # None: the live blocks were not classified

    # The tree as records, for the few readers of a whole file (mprof dump):
    # the reduction reads the arrays of calls.
    @functools.cached_property
    def nodes(self) -> tuple[Node, ...]:
        """Parents before their children."""
        return tuple(Node(parent, self.addresses[address])
                     for parent, address in zip(self.calls.parents, self.calls.addresses, strict=True))

    @functools.cached_property
    def paths(self) -> tuple[CallPath, ...]:
        f = self.calls.figures
        return tuple(CallPath(node, f[at], f[at + 1], (f[at + 2], f[at + 3], f[at + 4], f[at + 5]),
                              (f[at + 6], f[at + 7], f[at + 8], f[at + 9]), f[at + 10], f[at + 11], f[at + 12])
                     for node, at in zip(self.calls.path_nodes, range(0, len(f), FIGURES), strict=True))
