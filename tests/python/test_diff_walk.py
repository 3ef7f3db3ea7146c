"""mprof diff's rows as libmprof-reduce sums them (diff/compare.py, through
reduce/diffwalk.c) against the Python comparison they replaced
(reference_diff.py), on random pairs of profiles: recursion, one function
in several modules and one key of several functions, lines of one call
merged, paths of no caller, suppressed and runtime paths, paths that count
for nothing, and two sides of different trees, functions and names.  Every
view's rows, in their order, with their labels, keys, figures and frames;
the largest changes; the totals; and the differential flame graphs."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

import reference_diff
from mprof.diff import compare as diff
from mprof.diff import flame as diff_flame
from mprof.report.measures import Measure, measures
from mprof.report.model import BinRow, FunctionRow, Model, PathNodeRow, PathRow, PathTree, RunInfo

# The functions both sides may have: (whole name, module); a side numbers
# and names them its own way.
POOL = [(f"ns::f{n}(int)" if n % 3 else f"f{n}", module)
        for n in range(14) for module in (("/usr/bin/prog",) if n % 4 else ("/usr/bin/prog", "/lib/libx.so.1"))]
POOL += [("f1(int)", "/opt/other/libx.so.1"),  # another libx.so.1: the same key as /lib's
         ("std::vector<int>::push_back(int const&)", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"),
         ("malloc", "/lib/x86_64-linux-gnu/libc.so.6")]
FILES = ["a.c", "src/a.c", "/build/src/b.cc", "", "dir/", "/usr/include/c++/12/bits/vector.tcc"]
RUNTIMES = ["", "", "", "stdio buffer"]


def random_model(rng: random.Random, nodes_wanted: int, program: str = "/usr/bin/prog") -> Model:
    chosen = rng.sample(POOL, rng.randint(3, len(POOL)))
    ids = rng.sample(range(1, 4 * len(chosen) if rng.random() < 0.7 else 10 ** 9), len(chosen))
    functions: dict[int, FunctionRow] = {}
    for function_id, (full_name, module) in zip(ids, chosen, strict=True):
        # A shown name may drop what the whole name says, and differ from the other side's.
        name = full_name.split("(")[0] + ("'" if rng.random() < 0.2 else "")
        functions[function_id] = FunctionRow(function_id, name, module, "x.c", 1, None, 0, (0,) * 4, (0,) * 4, 0, 0,
                                             0, 0, full_name)
    # A key of two functions: the same whole name and module, twice.
    if rng.random() < 0.3:
        twin = rng.choice(list(functions.values()))
        twin_id = max(functions) + rng.randint(1, 5)
        functions[twin_id] = FunctionRow(twin_id, twin.name + "2", twin.module, "y.c", 2, None, 0, (0,) * 4, (0,) * 4,
                                         0, 0, 0, 0, twin.signature)
    function_ids = list(functions)
    # Sparse ids, a parent's before its children's, as PathTree.of takes them.
    node_ids = sorted(rng.sample(range(1, 10 * nodes_wanted + 10), nodes_wanted))
    nodes: dict[int, PathNodeRow] = {}
    made: list[int] = []
    for node_id in node_ids:
        parent = rng.choice(made) if made and rng.random() < 0.9 else None
        if parent is not None and rng.random() < 0.3:
            # Recursion: a function of the way down again.
            above, step = [], parent
            while step is not None:
                above.append(nodes[step].function)
                step = nodes[step].parent
            function = rng.choice(above)
        else:
            function = rng.choice(function_ids)
        nodes[node_id] = PathNodeRow(parent, function, rng.choice(FILES), rng.choice((1, 2, 2, 30)),
                                     rng.random() < 0.2)
        made.append(node_id)
    paths = []
    for node_id in rng.sample(made, rng.randint(1, len(made))) + [None] * rng.randint(0, 2):
        if rng.random() < 0.15:
            figures = [0] * 13  # counts for nothing
        else:
            figures = [rng.choice((0, 1, 2, 7, 100, 4096)) for _ in range(13)]
        allocs = max(figures[0], figures[1])
        paths.append(PathRow(node_id, allocs, figures[1], tuple(figures[2:6]), tuple(figures[6:10]),  # type: ignore[arg-type]
                             rng.choice(RUNTIMES), figures[10], figures[11], figures[12]))
    tree = PathTree.of(nodes, paths, {function_id: function.full_name for function_id, function in functions.items()})
    if rng.random() < 0.3:
        # Children before their parents (negative ids): the walk takes no
        # order of ids for a walk down.
        tree.db.execute("UPDATE path_nodes SET id = -id, parent_id = -parent_id")
        tree.db.execute("UPDATE paths SET node_id = -node_id")
    suppressions = {n: rng.choice(("leak:f1", "")) for n in range(len(paths)) if rng.random() < 0.2}
    bins = [BinRow(size, rng.randint(0, 9), rng.randint(0, 9), rng.randint(0, 999), rng.randint(0, 999), "")
            for size in sorted(rng.sample((8, 16, 24, 64, 1025), rng.randint(0, 4)))]
    runs = [RunInfo(1, 0, program, program, 1, True, True, False, 0, False, 5)]
    return Model(runs, {}, functions, [], {}, bins, [], tree=tree, path_suppressions=suppressions)


def rows_of(view: diff.View | reference_diff.View) -> list[tuple[object, ...]]:
    return [(row.key, row.label, row.base, row.new, row.frames) for row in view.rows.values()]


def reference_shown(view: reference_diff.View, index: int, threshold: float | None,
                    top: int | None) -> tuple[list[reference_diff.Row], int]:
    """What diff/text.py's shown() made of a view before the walk."""
    rows = view.largest(index)
    kept = rows
    if threshold is not None:
        kept = [row for row in rows if row.change(index) and abs(row.change(index)) >= threshold]
    return (kept if top is None else kept[:top]), len(rows)


def assert_same(base: Model, new: Model, chosen: tuple[Measure, ...]) -> None:
    found = diff.compare(base, new, chosen)
    expected = reference_diff.compare(base, new, chosen)
    assert (found.totals.base, found.totals.new) == (expected.totals.base, expected.totals.new)
    assert [view.name for view in found.views] == [view.name for view in expected.views]
    for mine, theirs in zip(found.views, expected.views, strict=True):
        assert rows_of(mine) == rows_of(theirs), mine.name
        for index in range(len(chosen)):
            for threshold, top in ((None, None), (None, 2), (3.0, None), (100.5, 1)):
                rows, changed = mine.shown(index, threshold, top)
                wanted, wanted_changed = reference_shown(theirs, index, threshold, top)
                assert changed == wanted_changed
                assert [(row.key, row.label, row.base, row.new) for row in rows] == [
                    (row.key, row.label, row.base, row.new) for row in wanted], (mine.name, index, threshold, top)
    for name in ("alloc_space", "leak_space", "peak_space"):
        if any(measure.name == name for measure in chosen):
            assert diff_flame.differential(found, name) == reference_diff.differential(expected, name), name


def nonlinear() -> tuple[Measure, ...]:
    """Measures that are no sum of a path's columns: the walk is given each
    path's figures."""
    return (*measures(), Measure("odd", "count", "odd", lambda path: max(path.allocs - 3, 0) * 2,
                                 lambda row: row.allocs))


@pytest.mark.parametrize("chosen", [measures, lambda: measures(runtime=True), nonlinear],
                         ids=["measures", "runtime", "nonlinear"])
@pytest.mark.slow
def test_the_walk_makes_the_reference_rows_on_random_profiles(chosen: Callable[[], tuple[Measure, ...]]) -> None:
    for seed in range(120):
        rng = random.Random(seed)
        base = random_model(rng, rng.randint(1, 40))
        # The new side: another tree, or the same profile.
        new = base if seed % 7 == 0 else random_model(rng, rng.randint(1, 40),
                                                      "/usr/bin/prog" if seed % 3 else "/tmp/prog-new")
        assert_same(base, new, chosen())


@pytest.mark.slow
def test_a_deep_recursion_of_one_function() -> None:
    names = {1: "main", 2: "recurse"}
    functions = {n: FunctionRow(n, name, "/usr/bin/prog", "x.c", 1, None, 0, (0,) * 4, (0,) * 4, 0, 0, 0, 0)
                 for n, name in names.items()}
    nodes = {1: PathNodeRow(None, 1, "x.c", 1)}
    for node in range(2, 3001):
        nodes[node] = PathNodeRow(node - 1, 2, "x.c", 2 + node % 2)
    paths = [PathRow(node, 1, 0, (node, 0, 0, 0), (0, 0, 0, 0)) for node in (3000, 1500, 2)]
    runs = [RunInfo(1, 0, "/usr/bin/prog", "prog", 1, True, True, False, 0, False, 5)]
    base = Model(runs, {}, functions, [], {}, [], [], tree=PathTree.of(nodes, paths, names))
    new = Model(runs, {}, functions, [], {}, [], [], tree=PathTree.of(nodes, paths[:1], names))
    assert_same(base, new, measures())
    cumulative = diff.compare(base, new, measures()).view("cumulative").rows
    # Each path counts once for recurse, however often it recurs on it.
    assert [(row.label, row.base[1], row.new[1]) for row in cumulative.values()] == [
        ("main", 3000 + 1500 + 2, 3000), ("recurse", 3000 + 1500 + 2, 3000)]


def test_a_file_that_is_not_utf8_keeps_its_bytes() -> None:
    rng = random.Random(5)
    base, new = random_model(rng, 20), random_model(rng, 20)
    for model in (base, new):
        model.tree.db.execute("UPDATE path_nodes SET file = CAST(X'2f7372632f66ff2e63' AS BLOB)")
    assert_same(base, new, measures())
    sites = diff.compare(base, new, measures()).view("sites").rows
    assert any(row.label.endswith("(f\udcff.c:2)") or row.label.endswith("(f\udcff.c:1)") for row in sites.values())
