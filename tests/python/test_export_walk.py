"""The exports' walks in libmprof-reduce (export.c) against the Python
they replaced (reference_export.py), on random trees: the same pprof
message field for field, the same collapsed bytes."""

from __future__ import annotations

import dataclasses
import gzip
import random

import pytest

from mprof.export import profile_pb2
from mprof.export.collapsed import collapsed
from mprof.export.pprof import profile
from mprof.report.measures import Measure, by_name, measures
from mprof.report.model import FunctionRow, Model, PathNodeRow, PathRow, PathTree, RunInfo
from reference_export import collapsed as reference_collapsed
from reference_export import profile as reference_profile

# Names that start one another, that differ around ';' once it is ':',
# of more than one byte a character, and one name for two functions.
NAMES = ["main", "a", "a b", "a:b", "a;b", "ab", "a\nb", "b", "é", "中文", "z", "operator new", "a"]
MODULES = ["prog", "/lib/libc.so.6", "/lib/libstdc++.so.6"]


def random_model(seed: int) -> Model:
    rng = random.Random(seed)
    functions = {
        id: FunctionRow(id, name, rng.choice(MODULES), rng.choice(["", "a.c", "b.cc"]), rng.randrange(3), None, 0,
                        (0,) * 4, (0,) * 4, 0, 0, 0, 0, f"{name}(int)" if rng.random() < 0.5 else "")
        for id, name in enumerate(NAMES, start=1 + rng.randrange(3))}
    nodes: dict[int, PathNodeRow] = {}
    node_id = 0
    for _ in range(rng.randrange(1, 120)):
        node_id += rng.choice([1, 1, 1, 2, 7])  # ids with gaps too
        parent = rng.choice([None, *list(nodes)[-12:], *list(nodes)[-12:]]) if nodes else None
        nodes[node_id] = PathNodeRow(parent, rng.choice(list(functions)), "f.c", rng.choice([0, 0, 3, 7]),
                                     rng.random() < 0.3)
    ends = rng.sample(list(nodes), rng.randrange(1, len(nodes) + 1)) + [None] * rng.randrange(3)

    def figure() -> int:
        return rng.choice([0, 0, 1, 5, 1 << 40, -3])

    rows = [PathRow(node, figure(), figure(), (figure(), figure(), 0, figure()), (figure(), 0, figure(), 0),
                    rng.choice(["", "", "", "stdio buffer"]), figure(), figure(), figure()) for node in ends]
    names = {id: row.name for id, row in functions.items()}
    runs = [RunInfo(10 + n, 1, f"/bin/prog{n}", f"prog{n} -x", 5, True, True, False, 0, False, 5, {}, 1000 - n)
            for n in range(rng.randrange(1, 3))]
    model = Model(runs, {"elapsed_ns": 77}, functions, [], {}, [], [], tree=PathTree.of(nodes, rows, names))
    count = len(model.tree.rows())
    return dataclasses.replace(model, path_suppressions={
        n: rng.choice(["leak:a", "", "leak:main"]) for n in rng.sample(range(count), rng.randrange(count + 1))})


def _decoded(data: bytes) -> profile_pb2.Profile:
    return profile_pb2.Profile.FromString(gzip.decompress(data))


@pytest.mark.parametrize("seed", range(150))
def test_pprof_is_the_references_profile(seed: int) -> None:
    model = random_model(seed)
    chosen = measures(runtime=seed % 2 == 0)
    made = _decoded(profile(model, chosen, "leak_space"))
    # Serialized again, the message is the reference's bytes: every field,
    # repeated ones in the same order, string indices and ids alike.
    assert made.SerializeToString() == reference_profile(model, chosen, "leak_space")
    counted = [path for path in model.paths if any(measure.of(path) for measure in chosen)]
    assert len(made.sample) == len(counted)
    for index, measure in enumerate(chosen):
        assert sum(sample.value[index] for sample in made.sample) == sum(map(measure.of, counted))


def test_a_sample_lists_its_machine_frames_innermost_first() -> None:
    model = random_model(7)
    made = _decoded(profile(model, measures(), "alloc_space"))
    lines = {location.id: [(line.function_id, line.line) for line in location.line] for location in made.location}
    names = {function.id: made.string_table[function.name] for function in made.function}
    counted = [path for path in model.paths if any(measure.of(path) for measure in measures())]
    for sample, path in zip(made.sample, counted, strict=True):
        frames = [(names[function], line) for location in sample.location_id for function, line in lines[location]]
        expected = [(model.functions[row.function].name, row.line) for row in model.frames(path.node)]
        assert frames == (expected or [("(no call chain)", 0)])


def test_a_measure_that_is_no_sum_of_columns_is_counted_from_its_figures() -> None:
    squared = Measure("squared", "count", "", lambda path: (path.allocs % 1000) ** 2,
                      lambda row: 0)
    for seed in range(20):
        model = random_model(seed)
        made = _decoded(profile(model, (squared,), "squared"))
        assert made.SerializeToString() == reference_profile(model, (squared,), "squared")
        assert sorted(sample.value[0] for sample in made.sample) == sorted(
            (path.allocs % 1000) ** 2 for path in model.paths if path.allocs % 1000)
        assert collapsed(model, squared) == reference_collapsed(model, squared).encode()


@pytest.mark.parametrize("seed", range(150))
def test_collapsed_is_the_references_text(seed: int) -> None:
    model = random_model(seed)
    for name in ("alloc_space", "leak_objects", "temp_objects"):
        measure = by_name(name, runtime=seed % 3 == 0)
        made = collapsed(model, measure)
        assert made == reference_collapsed(model, measure).encode()
        assert sum(int(line.rsplit(b" ", 1)[1]) for line in made.splitlines()) == sum(map(measure.of, model.paths))


def test_sums_past_64_bits_are_refused() -> None:
    # Two paths of one stack (two lines of one call), each of 2^62 blocks.
    model = dataclasses.replace(random_model(3), path_suppressions={}, tree=PathTree.of(
        {1: PathNodeRow(None, 1, "f.c", 1), 2: PathNodeRow(None, 1, "f.c", 2)},
        [PathRow(node, 1 << 62, 0, (0,) * 4, (0,) * 4) for node in (1, 2)], {1: "main"}))
    with pytest.raises(OverflowError):
        collapsed(model, by_name("alloc_objects"))
