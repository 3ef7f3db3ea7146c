"""The reduction of real programs' data files against the reduction as it
was done in Python before libmprof-reduce (tests/python/reference_reduction.py),
on the same resolved frames: the totals (sites, leak chains, pairs), the
call graph's tables (functions, cycles, edges, sites, leaks) and every row
of path_nodes and paths must be the same.  The programs: GCC's
cc1plus at -O2 (C++ with deep inlined stacks, the issue-31 case in small),
python3 (thousands of paths through libpython), the same in mprof- mode, and
recursion through libc's qsort (cycles, start-up code above main).

The runs are classified (the monitor's leak scan, mprof(5)'s LEAK): the
leaks tables' rows are per chain and kind, and the reference reads each
chain's kinds from LEAK itself, the regions the program mapped (python3's
arenas, cc1plus's pages) still reachable and the rest unknown, as mprof(5)
says, by the chain's innermost address where the reducer goes by name."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import REPO_ROOT, Run, Targets
from mprof.reducer import callgraph, pools, store, tree
from mprof.reducer.profile import reduce_files
from mprof.reducer.records import DataFile
from mprof.reducer.symbolize import Resolver, WarningSink

sys.path.insert(0, str(REPO_ROOT / "tests" / "python"))
import reference_reduction as reference  # noqa: E402

SOURCE = "#include <map>\n#include <string>\nstd::map<std::string, int> m;\nint f() { return (int)m.size(); }\n"
SCRIPT = "import json\nprint(len(json.dumps({str(n): [n] * n for n in range(300)})))\n"


def agree(data: DataFile, tmp_path: Path) -> int:
    """Compares the two reductions of data; the number of paths compared."""
    assert tree.totals(data) == reference.totals(data)
    profile = reduce_files([data])
    store.write_database(profile, tmp_path / "new.db")
    written = sqlite3.connect(tmp_path / "new.db")
    ids = {(name, module): number for number, name, module in written.execute("SELECT id, name, module FROM functions")}
    graph, paths = callgraph.CallGraph(), reference.PathTree()
    with Resolver(data.modules, WarningSink()) as resolver:
        # The pools' and mappings' frames are named as the reducer names
        # them: the reductions compared start from the same frames.
        frames = pools.resolve_all(sorted({node.addr for node in data.nodes}), data.pools, resolver.resolve)
    reference.add_graph_run(graph, reference.totals(data), data.header.call_graph, frames,
                            classified=data.leaks is not None)
    reference.add_run(paths, graph, data, frames)
    callgraph.finish(graph)
    # The call graph's tables as the store writes the former graph.
    profile.graph = graph
    store.write_database(profile, tmp_path / "former.db")
    former = sqlite3.connect(tmp_path / "former.db")
    for table in ("functions", "cycles", "edges", "sites", "leaks", "leak_frames"):
        query = f"SELECT * FROM {table}"
        assert written.execute(query).fetchall() == former.execute(query).fetchall(), table
    node_rows, path_rows = reference.rows(paths, ids)
    assert written.execute("SELECT * FROM path_nodes ORDER BY id").fetchall() == node_rows
    assert written.execute("SELECT * FROM paths ORDER BY node_id").fetchall() == path_rows
    return len(path_rows)


def largest(run: Run) -> DataFile:
    return run.data(max(run.files(), key=lambda path: path.stat().st_size))


@pytest.mark.slow
def test_cc1plus(profile: Callable[..., Run], tmp_path: Path) -> None:
    (tmp_path / "t.cc").write_text(SOURCE)
    run = profile(["g++", "-O2", "-c", "t.cc", "-o", "t.o"])
    data = largest(run)
    assert data.program.exe.endswith("/cc1plus")
    assert agree(data, tmp_path) > 1000


@pytest.mark.slow
@pytest.mark.parametrize("call_graph", ["1", "0"])
def test_python3(profile: Callable[..., Run], tmp_path: Path, call_graph: str) -> None:
    run = profile(["/usr/bin/python3", "-c", SCRIPT], MPROF_CALL_GRAPH=call_graph)
    assert run.completed.stdout.strip().isdigit()
    assert agree(largest(run), tmp_path) > 300


def test_recursion_through_qsort(targets: Targets, profile: Callable[..., Run], tmp_path: Path) -> None:
    run = profile([targets.build("recursion"), "qsort", "50"])
    assert agree(run.data(), tmp_path) >= 2
