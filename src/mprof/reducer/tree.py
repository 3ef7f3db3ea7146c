"""What a data file's call path tree adds up to: the direct allocation
sites (the paths' innermost addresses), the paper's partial chains of the
leak table (the paths grouped by their innermost leak-depth addresses) and
the caller/callee pairs of the call graph (each pair once per occurrence in
a path), all exact sums of the paths' figures, added up by libmprof-reduce
(core.Totals) and given here with their addresses.  The reduction reads
them inside the library (graph.c makes its call graph from them); this is
their view for the tests and for readers of a data file's raw figures."""

from __future__ import annotations

from dataclasses import dataclass

from .core import BELOW, FIGURES, LEAK_FIGURES
from .core import Totals as Sums
from .records import ClassBytes, DataFile, KindFigures


@dataclass(frozen=True)
class Site:
    addr: int
    calls: int
    frees: int
    bytes: ClassBytes
    freed: ClassBytes
    temporaries: int = 0
    peak_blocks: int = 0
    peak_bytes: int = 0


@dataclass(frozen=True)
class LeakChain:
    addrs: tuple[int, ...]  # innermost first, at most the leak depth
    allocs: int
    frees: int
    bytes: int
    bytes_freed: int
    kinds: KindFigures = (0, 0, 0, 0, 0, 0, 0, 0)  # LEAK's, summed: definite blocks, bytes, ... reachable bytes


@dataclass(frozen=True)
class Pair:
    caller: int
    callee: int
    calls: int
    bytes: ClassBytes


@dataclass(frozen=True)
class Totals:
    sites: tuple[Site, ...]
    leaks: tuple[LeakChain, ...]
    pairs: tuple[Pair, ...]  # none in mprof- mode


def addresses(data: DataFile, node: int, limit: int | None = None) -> tuple[int, ...]:
    """A path's addresses, innermost first, at most limit of them."""
    parents, indices, addresses = data.calls.parents, data.calls.addresses, data.addresses
    found: list[int] = []
    while node >= 0 and (limit is None or len(found) < limit):
        found.append(addresses[indices[node]])
        node = parents[node]
    return tuple(found)


def _kinds(values: list[int]) -> KindFigures:
    # Spelled out so that the type says exactly eight figures.
    return (values[0], values[1], values[2], values[3], values[4], values[5], values[6], values[7])


def totals(data: DataFile) -> Totals:
    sums = Sums(data.calls, data.header.leak_depth, data.header.call_graph)
    table = data.addresses
    s, leak, p = sums.site_figures, sums.leak_figures, sums.pair_figures
    return Totals(
        sites=tuple(Site(table[index], s[at], s[at + 1], (s[at + 2], s[at + 3], s[at + 4], s[at + 5]),
                         (s[at + 6], s[at + 7], s[at + 8], s[at + 9]), s[at + 10], s[at + 11], s[at + 12])
                    for index, at in zip(sums.site_addresses, range(0, len(s), FIGURES), strict=True)),
        leaks=tuple(LeakChain(tuple(table[index] for index in chain), leak[at], leak[at + 1], leak[at + 2],
                              leak[at + 3], _kinds(leak[at + 4:at + LEAK_FIGURES]))
                    for chain, at in zip(sums.leak_chains, range(0, len(leak), LEAK_FIGURES), strict=True)),
        pairs=tuple(Pair(table[caller], table[callee], p[at], (p[at + 1], p[at + 2], p[at + 3], p[at + 4]))
                    for caller, callee, at in zip(sums.pair_callers, sums.pair_callees, range(0, len(p), BELOW),
                                                  strict=True)),
    )
