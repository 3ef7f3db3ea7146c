"""Decoding of each section's payload into records.

The framing (header, section order, sizes, checksum) is checked before these
run; each function here checks only that its payload is exactly as long as
its entries and that the values are ones the format allows.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from ..leak_kinds import KINDS
from . import format as fmt
from .binary import Cursor
from .core import FIGURES
from .errors import FormatProblem
from .records import (
    Bin,
    CallPath,
    ClassBytes,
    KindFigures,
    LeakScan,
    Module,
    Node,
    PoolFrame,
    Program,
    Summary,
    TimePoint,
)


def _decode(raw: bytes | memoryview) -> str:
    # Paths and arguments are bytes on Unix; surrogateescape keeps any byte
    # that is not UTF-8 so that the original can be recovered exactly.
    return bytes(raw).decode("utf-8", "surrogateescape")


def _entries(count: int) -> str:
    return f"{count} entry" if count == 1 else f"{count} entries"


def _count_entries(payload: memoryview, section: str, entry_size: int) -> int:
    """Checks that a count-prefixed payload holds exactly its entries."""
    if len(payload) < fmt.COUNT.size:
        raise FormatProblem(
            f"corrupt: section {section} payload is {len(payload)} bytes, too short for its count"
        )
    (count,) = fmt.COUNT.unpack_from(payload)
    # Checking the total before decoding keeps a huge bogus count from
    # looping or allocating.
    need = fmt.COUNT.size + count * entry_size
    if len(payload) != need:
        raise FormatProblem(
            f"corrupt: section {section} payload is {len(payload)} bytes,"
            f" but {_entries(count)} {'needs' if count == 1 else 'need'} {need}"
        )
    return int(count)


def _check_totals(section: str, totals: dict[str, int]) -> None:
    """Every figure the reducer adds up is a sum over some of a section's
    entries, so a section whose totals fit in 64 bits never overflows a
    stored figure; no real run comes near 2^64 allocations or bytes."""
    for name, total in totals.items():
        if total > fmt.ADDRESS_MAX:
            raise FormatProblem(f"corrupt: section {section} {name} add up past 64 bits")


def _fixed_entries(
    payload: memoryview, section: str, layout: struct.Struct
) -> Iterator[tuple[int, ...]]:
    """Checks a count-prefixed payload of fixed-size entries and yields them."""
    _count_entries(payload, section, layout.size)
    return layout.iter_unpack(payload[fmt.COUNT.size :])


def parse_program(payload: memoryview) -> Program:
    cur = Cursor(payload, "PROG")
    exe = cur.take(cur.u32("the executable path length"), "the executable path")
    cmdline = bytes(cur.take(cur.u32("the command line length"), "the command line"))
    suppressions = cur.take(cur.u32("the leak suppressions length"), "the leak suppressions")
    refused = bytes(cur.take(cur.u32("the refused settings length"), "the refused settings"))
    cur.finish()
    if refused and not refused.endswith(b"\0"):
        raise FormatProblem("corrupt: PROG's refused settings do not end with a NUL")
    # /proc/pid/cmdline ends every argument with a NUL; accept a missing final
    # NUL too, since "separated by" in mprof(5) allows it.
    if cmdline.endswith(b"\0"):
        cmdline = cmdline[:-1]
    argv = [_decode(arg) for arg in cmdline.split(b"\0")] if cmdline else []
    return Program(exe=_decode(exe), argv=argv, lsan_suppressions=_decode(suppressions),
                   refused_settings=tuple(_decode(entry) for entry in refused[:-1].split(b"\0")) if refused else ())


def parse_modules(payload: memoryview) -> tuple[Module, ...]:
    cur = Cursor(payload, "MODS")
    count = cur.u64("the module count")
    modules: list[Module] = []
    # Each module consumes at least its fixed part, so a bogus count stops at
    # the payload's end instead of looping for long.
    for index in range(count):
        what = f"module {index}"
        bias, start, end, flags, id_len, path_len = cur.unpack(fmt.MODULE_FIXED, what)
        build_id = bytes(cur.take(id_len, f"the build-id of {what}"))
        path = _decode(cur.take(path_len, f"the path of {what}"))
        if flags & ~fmt.KNOWN_MODULE_FLAGS:
            raise FormatProblem(f"corrupt: {what} has unknown flags 0x{flags:x}")
        if start > end:
            raise FormatProblem(f"corrupt: {what} starts at 0x{start:x}, after its end 0x{end:x}")
        modules.append(
            Module(
                bias=bias,
                start=start,
                end=end,
                unloaded=bool(flags & fmt.MODULE_UNLOADED),
                build_id=build_id,
                path=path,
            )
        )
    cur.finish()
    return tuple(modules)


def parse_summary(payload: memoryview) -> Summary:
    values = [v for (v,) in _fixed_entries(payload, "SUMM", fmt.COUNT)]
    known = len(Summary.field_names())
    if len(values) < known:
        raise FormatProblem(
            f"corrupt: section SUMM has {len(values)} values, this mprof needs {known}"
        )
    # Values past the known ones come from a newer writer of the same version
    # and are ignored, as mprof(5) says.
    return Summary(*values[:known])


def parse_bins(payload: memoryview) -> tuple[Bin, ...]:
    bins: list[Bin] = []
    for index, (size, allocs, frees, nbytes, freed, temporaries, peak_blocks, peak_bytes) in enumerate(
        _fixed_entries(payload, "BINS", fmt.BIN_ENTRY)
    ):
        if size > fmt.BIN_LARGE:
            raise FormatProblem(f"corrupt: bin {index} has size {size}, above {fmt.BIN_LARGE}")
        if bins and size <= bins[-1].size:
            raise FormatProblem(
                f"corrupt: bin {index} has size {size}, not above the previous"
                f" bin's {bins[-1].size}"
            )
        bins.append(Bin(size=size, allocs=allocs, frees=frees, bytes=nbytes, bytes_freed=freed,
                        temporaries=temporaries, peak_blocks=peak_blocks, peak_bytes=peak_bytes))
    _check_totals("BINS", {"allocations": sum(b.allocs for b in bins), "frees": sum(b.frees for b in bins),
                           "bytes": sum(b.bytes for b in bins), "bytes freed": sum(b.bytes_freed for b in bins)})
    return tuple(bins)


def _classes(values: list[int]) -> ClassBytes:
    # Spelled out so that the type says exactly four classes.
    return (values[0], values[1], values[2], values[3])


def _uv_count(cur: Cursor) -> int:
    # No check of the count against the payload's size up front: every entry
    # takes at least one byte per field, so a bogus count runs into the end of
    # the payload, named by the entry it was in, before it can loop for long.
    return cur.u64("the entry count")


def _address(addresses: tuple[int, ...], index: int, section: str, entry: int, field: str) -> int:
    # Resolving here keeps the records' shape of real addresses, so nothing
    # past the reader knows that the file stores indices.
    try:
        return addresses[index]
    except IndexError:
        raise FormatProblem(
            f"corrupt: section {section} entry {entry} has {field} index {index},"
            f" but section ADDR has {_entries(len(addresses))}"
        ) from None


def parse_addresses(payload: memoryview) -> tuple[int, ...]:
    """The ADDR table: increasing addresses, each but the first a difference."""
    cur = Cursor(payload, "ADDR")
    addresses: list[int] = []
    previous = 0
    for index in range(_uv_count(cur)):
        step = cur.uv(f"entry {index}")
        # The first is the address itself, and no return address is 0; a zero
        # difference would make two indices name one address.
        if step == 0:
            if index == 0:
                raise FormatProblem("corrupt: section ADDR entry 0 is address 0")
            raise FormatProblem(
                f"corrupt: section ADDR entry {index} is not above the one before"
                " (difference 0)"
            )
        previous += step
        if previous > fmt.ADDRESS_MAX:
            raise FormatProblem(f"corrupt: section ADDR entry {index} is past 64 bits")
        addresses.append(previous)
    cur.finish()
    return tuple(addresses)


def parse_nodes(payload: memoryview, addresses: tuple[int, ...]) -> tuple[Node, ...]:
    """The call path tree: each node's parent comes before it."""
    cur = Cursor(payload, "NODE")
    nodes: list[Node] = []
    for index in range(_uv_count(cur)):
        up, address = cur.uvs(fmt.NODE_FIELDS, f"entry {index}")
        if up > index:
            raise FormatProblem(
                f"corrupt: section NODE entry {index} names a parent {up} entries up, before the first"
            )
        nodes.append(Node(parent=index - up if up else -1, addr=_address(addresses, address, "NODE", index,
                                                                          "address")))
    cur.finish()
    return tuple(nodes)


def parse_paths(payload: memoryview, nodes: tuple[Node, ...], depth: int) -> tuple[CallPath, ...]:
    """The figures of each call path; none deeper than depth addresses."""
    cur = Cursor(payload, "PATH")
    count = _uv_count(cur)
    fields = cur.u64("the field count")
    if fields < fmt.PATH_FIELDS:
        raise FormatProblem(f"corrupt: section PATH has {fields} fields a path, this mprof needs {fmt.PATH_FIELDS}")
    depths = _depths(nodes)
    paths: list[CallPath] = []
    seen: set[int] = set()
    for index in range(count):
        what = f"entry {index}"
        node = cur.uv(what) - 1
        if node >= len(nodes):
            raise FormatProblem(
                f"corrupt: section PATH entry {index} has node {node + 1}, but section NODE has "
                f"{_entries(len(nodes))}"
            )
        if node in seen:
            raise FormatProblem(f"corrupt: section PATH entry {index} repeats the path of an earlier entry")
        seen.add(node)
        if node >= 0 and depths[node] > depth:
            raise FormatProblem(
                f"corrupt: section PATH entry {index} is {depths[node]} addresses deep, above the header's "
                f"depth {depth}"
            )
        # Values past the known ones come from a newer writer of the same
        # version and are ignored, as mprof(5) says.
        allocs, frees, *by_class, temporaries, peak_blocks, peak_bytes = cur.uvs(fields, what)[: fmt.PATH_FIELDS]
        paths.append(CallPath(node=node, allocs=allocs, frees=frees, bytes=_classes(by_class[:4]),
                              freed=_classes(by_class[4:8]), temporaries=temporaries, peak_blocks=peak_blocks,
                              peak_bytes=peak_bytes))
    cur.finish()
    _check_totals("PATH", {"allocations": sum(p.allocs for p in paths), "frees": sum(p.frees for p in paths),
                           "bytes": sum(sum(p.bytes) for p in paths),
                           "bytes freed": sum(sum(p.freed) for p in paths),
                           "temporaries": sum(p.temporaries for p in paths),
                           "peak blocks": sum(p.peak_blocks for p in paths),
                           "peak bytes": sum(p.peak_bytes for p in paths)})
    return tuple(paths)


def _depths(nodes: tuple[Node, ...]) -> list[int]:
    """How many addresses each node's path holds."""
    depths: list[int] = []
    for node in nodes:
        depths.append(1 + (depths[node.parent] if node.parent >= 0 else 0))
    return depths


def parse_timeline(payload: memoryview) -> tuple[TimePoint, ...]:
    """The memory over the run: each point's time as its distance from the
    point before."""
    cur = Cursor(payload, "TIME")
    points: list[TimePoint] = []
    at = 0
    for index in range(_uv_count(cur)):
        step, live_bytes, live_blocks, resident, mapped = cur.uvs(fmt.TIME_FIELDS, f"entry {index}")
        at += step
        if at > fmt.ADDRESS_MAX:
            raise FormatProblem(f"corrupt: section TIME entry {index} is past 64 bits of nanoseconds")
        points.append(TimePoint(at, live_bytes, live_blocks, resident, mapped))
    cur.finish()
    return tuple(points)


def parse_pools(payload: memoryview) -> tuple[PoolFrame, ...]:
    cur = Cursor(payload, "POOL")
    count = cur.u64("the pool frame count")
    frames: list[PoolFrame] = []
    # Each frame consumes at least its fixed part: a bogus count stops at
    # the payload's end.
    for index in range(count):
        what = f"pool frame {index}"
        creator, name_size = cur.unpack(fmt.POOL_FIXED, what)
        frames.append(PoolFrame(creator, _decode(cur.take(name_size, f"the name of {what}"))))
    cur.finish()
    return tuple(frames)


def parse_leaks(payload: memoryview, path_figures: list[int]) -> LeakScan:
    """The leak kinds by path; path_figures: PATH's figures, FIGURES a path,
    which bound what each entry may call lost or reachable."""
    cur = Cursor(payload, "LEAK")
    flags, stopped, unstopped, root_bytes, block_bytes, scan_ns = cur.unpack(fmt.LEAK_FIXED, "the scan's figures")
    if flags & ~fmt.KNOWN_LEAK_FLAGS:
        raise FormatProblem(f"corrupt: section LEAK has unknown flags 0x{flags & ~fmt.KNOWN_LEAK_FLAGS:x}")
    count = cur.u64("the entry count")
    fields = cur.u64("the field count")
    if fields < fmt.LEAK_FIELDS:
        raise FormatProblem(f"corrupt: section LEAK has {fields} fields a path, this mprof needs {fmt.LEAK_FIELDS}")
    paths = len(path_figures) // FIGURES
    kinds: dict[int, KindFigures] = {}
    previous = -1
    # Each entry takes a byte a value at least: a bogus count runs into the
    # payload's end, named by its entry, before it loops for long.
    for index in range(count):
        what = f"entry {index}"
        path = cur.uv(what)
        if path >= paths:
            raise FormatProblem(f"corrupt: section LEAK entry {index} names path {path}, but section PATH has "
                                f"{_entries(paths)}")
        if path <= previous:
            raise FormatProblem(f"corrupt: section LEAK entry {index} names path {path}, not after the entry "
                                f"before's {previous}")
        previous = path
        # Values past the known ones come from a newer writer: ignored.
        values = cur.uvs(fields, what)[: fmt.LEAK_FIELDS]
        _check_live(index, path, values, path_figures[path * FIGURES:(path + 1) * FIGURES])
        kinds[path] = (values[0], values[1], values[2], values[3], values[4], values[5], values[6], values[7])
    cur.finish()
    return LeakScan(flags, stopped, unstopped, root_bytes, block_bytes, scan_ns, kinds)


def _check_live(index: int, path: int, values: list[int], figures: list[int]) -> None:
    """No kind, nor all of them together, may hold more than the path has live."""
    live = (figures[0] - figures[1], sum(figures[2:6]) - sum(figures[6:10]))
    for which, unit in enumerate(("blocks", "bytes")):
        for kind, words in enumerate(KINDS):
            if values[2 * kind + which] > live[which]:
                raise FormatProblem(f"corrupt: section LEAK entry {index} has {values[2 * kind + which]} {unit} "
                                    f"{words}, but path {path} has {live[which]} live")
        total = sum(values[which::2])
        if total > live[which]:
            raise FormatProblem(f"corrupt: section LEAK entry {index}'s kinds add up to {total} {unit}, but "
                                f"path {path} has {live[which]} live")
