"""Decoding of each section's payload into records.

The framing (header, section order, sizes, checksum) is checked before these
run; each function here checks only that its payload is exactly as long as
its entries and that the values are ones the format allows.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from . import format as fmt
from .binary import Cursor
from .errors import FormatProblem
from .records import Bin, ClassBytes, LeakChain, Module, Pair, Program, Site, Summary


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
    cur.finish()
    # /proc/pid/cmdline ends every argument with a NUL; accept a missing final
    # NUL too, since "separated by" in mprof(5) allows it.
    if cmdline.endswith(b"\0"):
        cmdline = cmdline[:-1]
    argv = [_decode(arg) for arg in cmdline.split(b"\0")] if cmdline else []
    return Program(exe=_decode(exe), argv=argv)


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
    for index, (size, allocs, frees, nbytes, freed) in enumerate(
        _fixed_entries(payload, "BINS", fmt.BIN_ENTRY)
    ):
        if size > fmt.BIN_LARGE:
            raise FormatProblem(f"corrupt: bin {index} has size {size}, above {fmt.BIN_LARGE}")
        if bins and size <= bins[-1].size:
            raise FormatProblem(
                f"corrupt: bin {index} has size {size}, not above the previous"
                f" bin's {bins[-1].size}"
            )
        bins.append(Bin(size=size, allocs=allocs, frees=frees, bytes=nbytes, bytes_freed=freed))
    return tuple(bins)


def _classes(values: tuple[int, ...]) -> ClassBytes:
    # Spelled out so that the type says exactly four classes.
    return (values[0], values[1], values[2], values[3])


def parse_sites(payload: memoryview) -> tuple[Site, ...]:
    return tuple(
        Site(
            addr=entry[0],
            calls=entry[1],
            frees=entry[2],
            bytes=_classes(entry[3:7]),
            freed=_classes(entry[7:11]),
        )
        for entry in _fixed_entries(payload, "SITE", fmt.SITE_ENTRY)
    )


def parse_leaks(payload: memoryview, depth: int) -> tuple[LeakChain, ...]:
    entry_size = fmt.leak_entry_size(depth)
    if _count_entries(payload, "LEAK", entry_size) == 0:
        # The layout is built only once the payload proved that the header's
        # leak depth is real: a bogus huge depth would cost a huge struct.
        return ()
    chains: list[LeakChain] = []
    for index, entry in enumerate(fmt.leak_entry(depth).iter_unpack(payload[fmt.COUNT.size :])):
        addrs = entry[:depth]
        used = depth
        while used and addrs[used - 1] == 0:
            used -= 1
        # Zero only pads a short chain; one inside it means a broken writer.
        if 0 in addrs[:used]:
            raise FormatProblem(f"corrupt: leak chain {index} has a zero address before its end")
        allocs, frees, nbytes, freed = entry[depth:]
        chains.append(
            LeakChain(
                addrs=tuple(addrs[:used]),
                allocs=allocs,
                frees=frees,
                bytes=nbytes,
                bytes_freed=freed,
            )
        )
    return tuple(chains)


def parse_pairs(payload: memoryview, call_graph: bool) -> tuple[Pair, ...]:
    pairs = tuple(
        Pair(caller=entry[0], callee=entry[1], calls=entry[2], bytes=_classes(entry[3:7]))
        for entry in _fixed_entries(payload, "PAIR", fmt.PAIR_ENTRY)
    )
    if pairs and not call_graph:
        raise FormatProblem(
            f"corrupt: section PAIR has {_entries(len(pairs))}"
            " but the header's call-graph flag is clear"
        )
    return pairs
