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
from mprof.reducer import datafile
from mprof.reducer import format as fmt

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]


def test_mutated_data_files_are_read_or_refused_in_one_line(targets: Targets, tmp_path: Path,
                                                            record_property: Callable[[str, object], None]) -> None:
    names = ("widgets", "cxx", "plugin", "arena", "mapped")
    seeds = seed_runs(targets, tmp_path, *names)
    # The sections and frames of pools and of mapped memory are among what
    # the mutations start from.
    arena, mapped = datafile.read(seeds / "arena.mprof"), datafile.read(seeds / "mapped.mprof")
    assert [pool.name for pool in arena.pools] == ["parser arena"] and arena.summary.backing_blocks == 1
    assert {fmt.MMAP_FRAME, fmt.BRK_FRAME} <= set(mapped.addresses)
    inputs, lines = fuzzed("fuzz.py", 2000, record_property, *(seeds / f"{name}.mprof" for name in names))
    # Every input through the reader; every fourth through one command in turn.
    assert lines[-1] == f"{inputs + (inputs + 3) // 4} passed, 0 failed"
    read_inputs, read, refused = counts(lines, "reader:")
    assert read_inputs == inputs and read > inputs // 20 and refused > inputs // 20
    # Some mutations must get through to a report, or the run proved little.
    for command in ("report", "json", "db", "html"):
        runs, reported, refused = counts(lines, f"{command}:")
        assert reported > runs // 20 and refused > runs // 20, lines
