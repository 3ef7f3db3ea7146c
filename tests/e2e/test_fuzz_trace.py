"""The mutation fuzzer of the trace reader (tests/fuzz/fuzz_trace.py, over
mprof-replay prepare) over traces of real runs: every mutated trace is
prepared, or refused in one line naming the file; never a crash, a hang or
more than 200 MB (see the fuzzer's docstring; fuzzing.py for how long it
runs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import Targets
from fuzzing import counts, fuzzed, seed_runs

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]


def test_mutated_traces_are_prepared_or_refused_in_one_line(targets: Targets, tmp_path: Path,
                                                            record_property: Callable[[str, object], None]) -> None:
    seeds = seed_runs(targets, tmp_path, "widgets", "cxx", "threads")
    inputs, lines = fuzzed("fuzz_trace.py", 2000, record_property,
                           *(seeds / f"{name}.mprof.trace" for name in ("widgets", "cxx", "threads")))
    assert lines[-1] == f"{inputs} passed, 0 failed"
    prepare_inputs, prepared, refused = counts(lines, "prepare:")
    assert prepare_inputs == inputs and prepared > inputs // 20 and refused > inputs // 20
    played, figures, _ = counts(lines, "run --null:")
    assert figures > played // 2 > 0
