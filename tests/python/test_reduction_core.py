"""libmprof-reduce against the reduction as it was done in Python
(reference_reduction.py): on random call path trees, with recursion,
shared prefixes, inlined frames, main at any depth (start-up code above
it) and the empty path, the sites, leak chains, pairs and the rows of
path_nodes and paths must be the same, in the same order."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

import reference_reduction as reference
from datafile_builder import DataFileBuilder
from mprof.reducer import callgraph, datafile, frames_table, pathtree, store, tree
from mprof.reducer.callgraph import CallGraph
from mprof.reducer.errors import MprofError
from mprof.reducer.profile import reduce_files
from mprof.reducer.records import DataFile
from mprof.reducer.symbolize import Frame

SEEDS = range(40)


def random_file(generator: random.Random) -> DataFile:
    pool = [0x1000 + 0x10 * n for n in range(generator.randint(1, 30))]
    paths: dict[tuple[int, ...], tuple[object, ...]] = {}
    for _ in range(generator.randint(0, 120)):
        addrs = tuple(generator.choice(pool) for _ in range(generator.randint(0, 12)))
        by_class = tuple(generator.choice((0, generator.randint(1, 1 << 40))) for _ in range(4))
        freed = tuple(generator.randint(0, value) for value in by_class)
        allocs = generator.randint(1, 1000)
        paths[addrs] = (addrs, allocs, generator.randint(0, allocs), by_class, freed, generator.randint(0, allocs),
                        generator.randint(0, allocs), generator.randint(0, 1 << 30))
    # Half the files classified: each path's live blocks and bytes split
    # among the kinds, some of them now and then left out.
    entries = [(index, *_split(generator, allocs - frees, sum(by_class) - sum(freed)))
               for index, (_, allocs, frees, by_class, freed, *_) in enumerate(paths.values())
               if allocs > frees and generator.random() < 0.9]
    return datafile.parse(DataFileBuilder(flags=generator.choice((0x3, 0x1)), leak_depth=generator.randint(1, 6),
                                          stack_depth=16, paths=list(paths.values()),
                                          leak=(0, 1, 0, 64, 64, 1) if generator.random() < 0.5 else None,
                                          leak_entries=entries).build())


def _split(generator: random.Random, blocks: int, size: int) -> list[int]:
    """Blocks and bytes of four kinds, adding up to at most those given."""
    cuts = [sorted(generator.randint(0, total) for _ in range(4)) for total in (blocks, size)]
    return [cut[kind] - (cut[kind - 1] if kind else 0) for kind in range(4) for cut in cuts]


def random_frames(data: DataFile, generator: random.Random) -> dict[int, list[Frame]]:
    """Each address's frames, innermost first: one machine frame and up to
    two inlined into it (the outermost is the one not inlined); main now and
    then, itself or inlined."""
    names = ["main", "f", "g", "h", "std::vector<int>::push_back", "(anonymous namespace)::pool::pool", "setlocale"]
    modules = ["/bin/prog", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/lib/x86_64-linux-gnu/libc.so.6"]
    frames: dict[int, list[Frame]] = {}
    for address in data.addresses:
        count = generator.randint(1, 3)
        frames[address] = [Frame(generator.choice(names), generator.choice(("a.c", "b.cc", "")),
                                 generator.randint(0, 50), generator.choice(modules), address, position < count - 1)
                           for position in range(count)]
    return frames


@pytest.mark.parametrize("seed", SEEDS)
def test_totals_are_the_python_reductions(seed: int) -> None:
    data = random_file(random.Random(seed))
    assert tree.totals(data) == reference.totals(data)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_path_tables_are_the_python_reductions(seed: int, tmp_path: Path) -> None:
    generator = random.Random(seed)
    files = [random_file(generator) for _ in range(generator.randint(1, 3))]
    graph, expected_graph = CallGraph(), CallGraph()
    paths, expected = pathtree.PathTree(), reference.PathTree()
    for data in files:
        frames = random_frames(data, generator)
        table = frames_table.frames_table(data, frames, paths.names)
        callgraph.add_run(graph, data, table, paths.names)
        reference.add_graph_run(expected_graph, reference.totals(data), data.header.call_graph, frames,
                                classified=data.leaks is not None)
        # Either side registers its functions; both must register the same.
        pathtree.add_run(paths, graph, data, table)
        reference.add_run(expected, expected_graph, data, frames)
    assert graph == expected_graph
    ids = {key: number for number, key in enumerate(sorted(graph.functions), start=1)}
    database = tmp_path / "paths.db"
    db = store.connect_for_writing(database)
    db.executescript(store.SCHEMA.read_text())
    db.close()
    store._start_paths(database, paths, ids).finish()
    written = sqlite3.connect(database)
    node_rows, path_rows = reference.rows(expected, ids)
    assert written.execute("SELECT * FROM path_nodes ORDER BY id").fetchall() == node_rows
    assert written.execute("SELECT * FROM paths ORDER BY node_id").fetchall() == path_rows


def test_paths_of_several_files_past_64_bits_are_refused() -> None:
    # Each file is valid; their paths with no caller (no site, no edge)
    # add up past 2^64 only in the merged tree.
    top = (1 << 64) - 1
    files = [datafile.parse(DataFileBuilder(pid=pid, paths=[((), 1, 0, (top, 0, 0, 0), (0,) * 4)]).build(),
                            f"{pid}.mprof") for pid in (1, 2)]
    with pytest.raises(MprofError, match=r"^1\.mprof, 2\.mprof: figures add up past 64 bits"):
        reduce_files(files)
