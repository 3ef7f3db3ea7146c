"""The database fuzzer (tests/fuzz/fuzz_db.py) over databases of real runs:
every SQL-edited copy gets a result or one line naming the file and a
non-zero exit from report, html, diff and export, and one whose tree of
path nodes no report can walk, the line; no traceback, no hang, the
worker within 200 MB (see the fuzzer's docstring; fuzzing.py for how
long it runs)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import BUILD, Targets, monitor_env, mprof
from fuzzing import fuzzed

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]


def run_program(command: list[str | Path], output: Path) -> Path:
    subprocess.run([str(part) for part in command], env=monitor_env(output), check=True, capture_output=True,
                   timeout=60)
    return output


def test_edited_databases_get_a_result_or_one_line(targets: Targets, tmp_path: Path,
                                                   record_property: Callable[[str, object], None]) -> None:
    # Two processes of widgets in one database; C++ with a cycle and the
    # runtime's exception pool; widgets with a replay of two allocators.
    many = tmp_path / "widgets.db"
    mprof("db", run_program([BUILD / "widgets", "300"], tmp_path / "a.mprof"),
          run_program([BUILD / "widgets", "100"], tmp_path / "b.mprof"), "-o", many)
    cxx = tmp_path / "cxx.db"
    mprof("db", run_program([targets.build("cxx")], tmp_path / "cxx.mprof"), "-o", cxx)
    replayed = tmp_path / "replayed.db"
    mprof("db", tmp_path / "b.mprof", "-o", replayed)
    mprof("replay", "--synthetic", "--operations", "200", "--allocators", "glibc", "--repeat", "1", "--db", replayed)

    inputs, lines = fuzzed("fuzz_db.py", 400, record_property, many, cxx, replayed)
    assert re.fullmatch(r"\d+ passed, 0 failed", lines[-1]), lines[-1]
    figures = re.fullmatch(r"(\d+) inputs in ([\d.]+) s: (\d+) gave results, (\d+) were refused; "
                           r"peak resident ([\d.]+) MB", lines[-3])
    assert figures, lines[-3]
    results, refusals = int(figures[3]), int(figures[4])
    assert results + refusals == inputs
    # Both kinds in number, or the run proved little: edits that pass the
    # checks reach the reports, and the others the checks.
    assert results > inputs // 5 and refusals > inputs // 5
    assert float(figures[5]) <= 200
    # The edits of the tree a report walks up (a node its own parent, a
    # loop of parents, an id in the middle deleted), each input refused:
    # a share of their weights' (3 in 24, for the three inputs in four of
    # one edit), or the run proved little of them.
    tree = re.fullmatch(r"(\d+) inputs of one edit of the tree of path nodes or functions, each to be refused",
                        lines[-2])
    assert tree and int(tree[1]) > inputs // 20, lines[-2]
    # Each command gave both, the page and the comparison too.
    for command in ("report", "html", "diff", "export"):
        [line] = [line for line in lines if line.startswith(f"{command}: ")]
        counts = re.fullmatch(rf"{command}: (\d+) runs, (\d+) results, (\d+) refused in one line", line)
        assert counts, line
        assert int(counts[2]) > inputs // 100 and int(counts[3]) > inputs // 5, line
