"""What a data file's call path tree adds up to: the direct allocation
sites (the paths' innermost addresses), the paper's partial chains of the
leak table (the paths grouped by their innermost leak-depth addresses) and
the caller/callee pairs of the call graph (each pair once per occurrence in
a path), all exact sums of the paths' figures."""

from __future__ import annotations

from dataclasses import dataclass

from .records import ClassBytes, DataFile, Node


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


def addresses(nodes: tuple[Node, ...], node: int, limit: int | None = None) -> tuple[int, ...]:
    """A path's addresses, innermost first, at most limit of them."""
    found: list[int] = []
    while node >= 0 and (limit is None or len(found) < limit):
        found.append(nodes[node].addr)
        node = nodes[node].parent
    return tuple(found)


def _add(into: list[int], values: tuple[int, ...] | list[int], offset: int = 0) -> None:
    for n, value in enumerate(values):
        into[offset + n] += value


def totals(data: DataFile) -> Totals:
    nodes = data.nodes
    sites: dict[int, list[int]] = {}
    leaks: dict[tuple[int, ...], list[int]] = {}
    # Below each node: calls and bytes by class of every path through it.
    below = [[0] * 5 for _ in nodes]
    for path in data.paths:
        if path.node >= 0:
            site = sites.setdefault(nodes[path.node].addr, [0] * 13)
            _add(site, (path.allocs, path.frees, *path.bytes, *path.freed, path.temporaries, path.peak_blocks,
                        path.peak_bytes))
            _add(below[path.node], (path.allocs, *path.bytes))
        chain = leaks.setdefault(addresses(nodes, path.node, data.header.leak_depth), [0] * 4)
        _add(chain, (path.allocs, path.frees, sum(path.bytes), sum(path.freed)))
    pairs: dict[tuple[int, int], list[int]] = {}
    # Children come after their parents: from the last node back, each has
    # all of its descendants' figures before it passes them up.
    for index in range(len(nodes) - 1, -1, -1):
        parent = nodes[index].parent
        if parent < 0:
            continue
        _add(below[parent], below[index])
        if data.header.call_graph:
            _add(pairs.setdefault((nodes[parent].addr, nodes[index].addr), [0] * 5), below[index])
    return Totals(
        sites=tuple(Site(addr, f[0], f[1], (f[2], f[3], f[4], f[5]), (f[6], f[7], f[8], f[9]), f[10], f[11], f[12])
                    for addr, f in sites.items()),
        leaks=tuple(LeakChain(addrs, *f) for addrs, f in leaks.items()),
        pairs=tuple(Pair(caller, callee, f[0], (f[1], f[2], f[3], f[4])) for (caller, callee), f in pairs.items()),
    )
