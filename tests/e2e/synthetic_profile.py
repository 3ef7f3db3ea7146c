"""A large, self-consistent profile built in memory, for measuring the HTML
report at the size of a big C++ program: tens of thousands of functions on
a call graph whose edges and totals agree as the reducer's do."""

from __future__ import annotations

import dataclasses
import random

from mprof.reducer.records import Summary
from mprof.report.model import (
    BinRow,
    EdgeRow,
    FunctionRow,
    LeakFrame,
    LeakRow,
    Model,
    PathNodeRow,
    PathRow,
    PathTree,
    RunInfo,
)

LEAK_DEPTH = 5


def _split(total: int, parts: int, rng: random.Random) -> list[int]:
    cuts = sorted(rng.randint(0, total) for _ in range(parts - 1))
    return [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]


def _classes(total: int, rng: random.Random) -> tuple[int, int, int, int]:
    small, medium, large, huge = _split(total, 4, rng)
    return (small, medium, large, huge)


def synthetic_model(functions: int, seed: int = 1) -> Model:
    """Function 1 is main; every other function has one or two callers among
    the functions before it (a DAG), so callees are always numbered higher
    than their callers and totals can be summed from the last one back."""
    rng = random.Random(seed)
    callers: dict[int, list[int]] = {1: []}
    for f in range(2, functions + 1):
        first = rng.randrange(1, f)
        callers[f] = [first] if f < 10 or rng.random() < 0.8 else sorted({first, rng.randrange(1, f)})
    own = {f: (rng.randint(1, 64) * 8 * rng.randint(1, 200) if rng.random() < 0.5 else 0) for f in callers}
    own[1] = 0
    calls = {f: max(1, own[f] // rng.choice((16, 64, 256))) if own[f] else 0 for f in callers}
    total: dict[int, int] = {}
    edge_bytes: dict[tuple[int, int], int] = {}
    callees: dict[int, list[int]] = {}
    for f, above in callers.items():
        for caller in above:
            callees.setdefault(caller, []).append(f)
    for f in sorted(callers, reverse=True):
        total[f] = own[f] + sum(edge_bytes[(f, c)] for c in callees.get(f, []))
        for caller, share in zip(callers[f], _split(total[f], len(callers[f]), rng), strict=False):
            edge_bytes[(caller, f)] = share
    rows: dict[int, FunctionRow] = {}
    edges = []
    for (caller, callee), share in sorted(edge_bytes.items()):
        if share:
            edges.append(EdgeRow(caller, callee, rng.randint(1, 1000), _classes(share, rng)))
    called = dict.fromkeys(callers, 0)
    for e in edges:
        called[e.callee] += e.calls
    leaks = []
    for f in callers:
        self_bytes = _classes(own[f], rng)
        kept = own[f] // rng.choice((1, 2, 4)) if own[f] and rng.random() < 0.3 else 0
        kept_bytes = _classes(kept, rng)
        name = "main" if f == 1 else f"app::module{f % 97}::Widget<int, {f % 7}>::step_{f}(std::vector<int> const&)"
        rows[f] = FunctionRow(f, name, "/usr/bin/big", f"src/module{f % 97}.cc", 10 + f % 500, None, calls[f],
                              self_bytes, kept_bytes, kept // 64, total[f], called[f], 0)
        if kept:
            path: list[LeakFrame] = []
            at = f
            while len(path) < LEAK_DEPTH:
                path.append(LeakFrame(at, f"src/module{at % 97}.cc", 20 + at % 300))
                if not callers[at]:
                    break
                at = callers[at][0]
            leaks.append(LeakRow(kept // 64 + 1, 0, kept, 0, tuple(path)))
    allocated = sum(own.values())
    kept_total = sum(sum(r.kept_bytes) for r in rows.values())
    sizes = sorted(rng.sample(range(1, 1026), 300))
    bins = [BinRow(size, count, count // 2, size * count, size * (count // 2), "")
            for size, count in ((size, rng.randint(1, 5000)) for size in sizes)]
    summary = {field.name: 0 for field in dataclasses.fields(Summary)}  # every SUMM field, as the store writes
    summary |= {"allocs": sum(calls.values()), "frees": sum(calls.values()) // 2, "bytes_allocated": allocated,
                "bytes_freed": allocated - kept_total, "max_live_objects": sum(calls.values()) // 2,
                "max_live_bytes": allocated // 2, "elapsed_ns": 12_345_678_901}
    run = RunInfo(4242, 1, "/usr/bin/big", "/usr/bin/big --synthetic", 12_345_678_901, True, True, False, 0,
                  False, LEAK_DEPTH)
    # A whole path per allocating function, through its first callers up to main.
    path_nodes: dict[int, PathNodeRow] = {}
    node_of: dict[int, int] = {}  # function -> its node on its first callers' path
    for f in sorted(callers):
        parent = node_of[callers[f][0]] if callers[f] else None
        node_of[f] = len(path_nodes) + 1
        path_nodes[node_of[f]] = PathNodeRow(parent, f, f"src/module{f % 97}.cc", 20 + f % 300)
    paths = [PathRow(node_of[f], calls[f], calls[f] // 2, rows[f].self_bytes,
                     tuple(b - k for b, k in zip(rows[f].self_bytes, rows[f].kept_bytes, strict=True)))
             for f in callers if own[f]]
    tree = PathTree.of(path_nodes, paths, {f: row.full_name for f, row in rows.items()})
    model = Model([run], summary, rows, edges, {}, bins, leaks, tree=tree)
    for edge in edges:
        model.callers.setdefault(edge.callee, []).append(edge)
        model.callees.setdefault(edge.caller, []).append(edge)
    return model
