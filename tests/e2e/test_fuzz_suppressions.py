"""The mutation fuzzer of the suppressions reader
(tests/fuzz/fuzz_suppressions.py) over files made of a real profile's
names: every mutated file is read, or refused in one line naming it, and a
report with it agrees with the reader (see the fuzzer's docstring;
fuzzing.py for how long it runs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import Targets, mprof
from fuzzing import counts, fuzzed, seed_runs

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]


def test_mutated_suppressions_are_read_or_refused_in_one_line(targets: Targets, tmp_path: Path,
                                                              record_property: Callable[[str, object], None]) -> None:
    seeds = seed_runs(targets, tmp_path, "threads")
    mprof("db", seeds / "threads.mprof", "-o", seeds / "threads.db")
    inputs, lines = fuzzed("fuzz_suppressions.py", 1000, record_property, seeds / "threads.db")
    assert lines[-1] == f"{inputs} passed, 0 failed"
    read_inputs, read, refused = counts(lines, "reader:")
    assert read_inputs == inputs and read > inputs // 20 and refused > inputs // 20
    reports, suppressing, *_ = counts(lines, "report:")
    assert reports == read and suppressing > reports // 20
