"""The HTML page's peak table as libmprof-reduce writes it (reduce/page.c,
through report/page_core.py and html_rows.peak_rows): on random trees, the
same JSON text as the Python it replaced (reference_page.py), folds,
labels, shares and escapes alike; and the library refuses runs past their
paths."""

from __future__ import annotations

import array
import json
import random

import pytest

import reference_page
from mprof.report import html_rows, page_core
from mprof.report.display import for_display
from mprof.report.model import FunctionRow, Model, PathNodeRow, PathRow, PathTree, RunInfo

PROGRAM = "/home/dev/app/server"
MODULES = [PROGRAM, PROGRAM, "/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
           "/home/dev/app/libown.so", "[vdso]", "odd/<&'>.so"]
NAMES = ["main", "main", "Cache::get(int)", "std::vector<int, std::allocator<int> >::_M_allocate(unsigned long)",
         "std::__new_allocator<int>::allocate(unsigned long, void const*)", "malloc", "operator new(unsigned long)",
         "__gnu_cxx::__normal_iterator<int*>::operator++()", "</script><b>&amp;", "it's", "é > 名前", "x\udcff",
         "[3 frames]", "...", "core::ptr::drop_in_place<alloc::vec::Vec<u8>>", "a" * 70]


def random_model(rng: random.Random) -> Model:
    functions = {}
    for function_id in rng.sample(range(1, 400), rng.randint(1, 30)):
        name = rng.choice(NAMES) if rng.random() < 0.6 else "".join(rng.choice("abcxyz_:<>&'") for _ in range(
            rng.choice([1, 4, 12, 30])))
        functions[function_id] = FunctionRow(function_id, name, rng.choice(MODULES), "x.c", 1, None, 0, (0,) * 4,
                                             (0,) * 4, 0, 0, 0, 0, name)
    # Sparse ids or not, a parent's before its children's (as a database
    # holds them); deep paths, so that rows fold.
    count = rng.randint(1, 300)
    node_ids = sorted(rng.sample(range(1, 3 * count + 5), count)) if rng.random() < 0.5 else list(range(1, count + 1))
    nodes: dict[int, PathNodeRow] = {}
    for node_id in node_ids:
        made = list(nodes)
        parent = (made[-1] if rng.random() < 0.7 else rng.choice(made)) if made and rng.random() < 0.95 else None
        nodes[node_id] = PathNodeRow(parent, rng.choice(list(functions)), "x.c", 1)
    big = 1 << 62
    paths = []
    for node_id in rng.sample(node_ids, rng.randint(1, len(node_ids))) + [None] * rng.randint(0, 1):
        blocks = rng.choice((0, 1, 2, 7, 1000, 123456789))
        size = rng.choice((0, 1, 16, 4096, 10 ** 6, 7 * 10 ** 12, big // 8))
        paths.append(PathRow(node_id, 1, 0, (0,) * 4, (0,) * 4, peak_blocks=blocks, peak_bytes=size))
    tree = PathTree.of(nodes, paths, {f.id: f.name for f in functions.values()})
    summary = {"max_live_bytes": rng.choice((0, 1, 100, 10 ** 6, 10 ** 9, big))}
    run = RunInfo(1, 0, PROGRAM, PROGRAM, 1, True, True, False, 0, False, 5)
    return for_display(Model([run], summary, functions, [], {}, [], [], tree=tree))


@pytest.mark.slow
def test_the_library_writes_the_peak_rows_as_the_python_it_replaced() -> None:
    rng = random.Random(31)
    compared = folded = named_whole = 0
    for _ in range(300):
        model = random_model(rng)
        try:
            expected = reference_page.peak_rows(model)
        except IndexError:
            continue  # a row read as another's fold where it had no frame (test_folding.py)
        rows = html_rows.peak_rows(model)
        assert str(rows.json) == expected
        assert len(rows) == len(json.loads(expected))
        compared += 1
        folded += '"fold"' in expected
        named_whole += expected.count('"p":') - expected.count('"s":1')
    # Most tables are compared, and many of them fold; functions of one name make some rows read as others, which
    # name their functions whole.
    assert compared > 280 and folded > 100 and named_whole > 0


def test_the_rows_hold_no_markup() -> None:
    # Folds named after a module of <&'> in its name: escaped as tojson does.
    rng = random.Random(3)
    texts = [str(html_rows.peak_rows(random_model(rng)).json) for _ in range(100)]
    assert any("\\u003c\\u0026\\u0027\\u003e.so" in text for text in texts)
    assert not any(c in text for text in texts for c in "<>&'")


def test_a_run_past_its_path_is_refused() -> None:
    one = array.array("q", [1])
    with pytest.raises(AssertionError):
        page_core.path_rows(one, one, 1, array.array("Q", [2]), array.array("q", [5, 6]), array.array("B", [0]),
                            array.array("B", [1]), (array.array("I", [1]), array.array("I", [1]), array.array("I", [3]),
                             array.array("I", [0])), [b'"[2 frames]"'])
