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


def parse_sites(payload: memoryview, addresses: tuple[int, ...]) -> tuple[Site, ...]:
    cur = Cursor(payload, "SITE")
    sites: list[Site] = []
    for index in range(_uv_count(cur)):
        what = f"entry {index}"
        addr = _address(addresses, cur.uv(what), "SITE", index, "address")
        calls, frees, *by_class = cur.uvs(fmt.SITE_COUNTERS, what)
        sites.append(
            Site(
                addr=addr,
                calls=calls,
                frees=frees,
                bytes=_classes(by_class[:4]),
                freed=_classes(by_class[4:]),
            )
        )
    cur.finish()
    _check_totals("SITE", {"calls": sum(s.calls for s in sites), "frees": sum(s.frees for s in sites),
                           "bytes": sum(sum(s.bytes) for s in sites), "bytes freed": sum(sum(s.freed) for s in sites)})
    return tuple(sites)


def parse_leaks(
    payload: memoryview, depth: int, addresses: tuple[int, ...]
) -> tuple[LeakChain, ...]:
    cur = Cursor(payload, "LEAK")
    chains: list[LeakChain] = []
    for index in range(_uv_count(cur)):
        what = f"entry {index}"
        length = cur.uv(what)
        # Checked before the addresses are read: the monitor never records
        # more than the leak depth, so a longer chain is a broken writer.
        if length > depth:
            raise FormatProblem(
                f"corrupt: section LEAK entry {index} has length {length},"
                f" above the header's leak depth {depth}"
            )
        addrs = tuple(
            _address(addresses, i, "LEAK", index, "address") for i in cur.uvs(length, what)
        )
        allocs, frees, nbytes, freed = cur.uvs(fmt.LEAK_COUNTERS, what)
        chains.append(
            LeakChain(addrs=addrs, allocs=allocs, frees=frees, bytes=nbytes, bytes_freed=freed)
        )
    cur.finish()
    _check_totals("LEAK", {"allocations": sum(c.allocs for c in chains), "frees": sum(c.frees for c in chains),
                           "bytes": sum(c.bytes for c in chains),
                           "bytes freed": sum(c.bytes_freed for c in chains)})
    return tuple(chains)


def parse_pairs(
    payload: memoryview, call_graph: bool, addresses: tuple[int, ...]
) -> tuple[Pair, ...]:
    cur = Cursor(payload, "PAIR")
    pairs: list[Pair] = []
    for index in range(_uv_count(cur)):
        what = f"entry {index}"
        caller = _address(addresses, cur.uv(what), "PAIR", index, "caller")
        callee = _address(addresses, cur.uv(what), "PAIR", index, "callee")
        calls, *by_class = cur.uvs(fmt.PAIR_COUNTERS, what)
        pairs.append(Pair(caller=caller, callee=callee, calls=calls, bytes=_classes(by_class)))
    cur.finish()
    _check_totals("PAIR", {"calls": sum(p.calls for p in pairs), "bytes": sum(sum(p.bytes) for p in pairs)})
    if pairs and not call_graph:
        raise FormatProblem(
            f"corrupt: section PAIR has {_entries(len(pairs))}"
            " but the header's call-graph flag is clear"
        )
    return tuple(pairs)
