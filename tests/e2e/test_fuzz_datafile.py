"""The mutation fuzzer of the data file readers (tests/fuzz/fuzz.py) over
data files of real runs: every mutated input is read, or refused in one
line naming the file with a non-zero exit; never a traceback, a hang or
more than 200 MB (see the fuzzer's docstring for what every input goes
through, and for a long run by hand; fuzzing.py for how long it runs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import Targets
from fuzzing import counts, fuzzed, seed_runs

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]


def test_mutated_data_files_are_read_or_refused_in_one_line(targets: Targets, tmp_path: Path,
                                                            record_property: Callable[[str, object], None]) -> None:
    seeds = seed_runs(targets, tmp_path, "widgets", "cxx", "plugin")
    inputs, lines = fuzzed("fuzz.py", 2000, record_property, *(seeds / f"{name}.mprof"
                                                                for name in ("widgets", "cxx", "plugin")))
    # Every input through the reader; every fourth through one command in turn.
    assert lines[-1] == f"{inputs + (inputs + 3) // 4} passed, 0 failed"
    read_inputs, read, refused = counts(lines, "reader:")
    assert read_inputs == inputs and read > inputs // 20 and refused > inputs // 20
    # Some mutations must get through to a report, or the run proved little.
    for command in ("report", "json", "db", "html"):
        runs, reported, refused = counts(lines, f"{command}:")
        assert reported > runs // 20 and refused > runs // 20, lines
