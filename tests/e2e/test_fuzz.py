"""The mutation fuzzers of the readers, each over files of real runs made
here: data files (tests/fuzz/fuzz.py), traces (fuzz_trace.py) and
suppressions files (fuzz_suppressions.py).  Every mutated input gets a
result, or one line naming the file and a non-zero exit; never a
traceback, a hang or more than 200 MB.  Each runs 10,000 inputs, or
MPROF_FUZZ_INPUTS (see each fuzzer's docstring for what every input goes
through, and for a long run by hand)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from e2e_support import BUILD, MPROF, REPO_ROOT, Targets, monitor_env

FUZZ = REPO_ROOT / "tests" / "fuzz"
INPUTS = int(os.environ.get("MPROF_FUZZ_INPUTS") or 10_000)


@pytest.fixture(scope="module")
def seeds(targets: Targets, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Data files and traces of real runs: widgets, a C++ program, one that
    loads and unloads a plugin, and one whose threads free each other's
    blocks with every function of the malloc family; the last one's
    database too."""
    directory = tmp_path_factory.mktemp("seeds")
    runs = {"widgets": [BUILD / "widgets", "300"], "cxx": [targets.build("cxx")],
            "plugin": [targets.build("dlclose_main", "-ldl"),
                       targets.build("libplugin.so", source="plugin.c", shared=True)],
            "threads": [targets.build("trace_events"), "threads"]}
    for name, command in runs.items():
        output = directory / f"{name}.mprof"
        subprocess.run([str(part) for part in command], check=True, capture_output=True, timeout=60,
                       env=monitor_env(output, MPROF_TRACE=f"{output}.trace"))
    subprocess.run([MPROF, "db", directory / "threads.mprof", "-o", directory / "threads.db"], check=True,
                   capture_output=True, timeout=120)
    return directory


def fuzzed(script: str, *arguments: str | Path) -> list[str]:
    completed = subprocess.run([sys.executable, FUZZ / script, *map(str, arguments)], capture_output=True,
                               text=True, timeout=900)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    return completed.stdout.splitlines()


def counts(lines: list[str], start: str) -> list[int]:
    """The numbers of the line that starts so."""
    line = next(line for line in lines if line.startswith(start))
    return [int(number) for number in re.findall(r"\d+", line)]


def test_mutated_data_files_are_read_or_refused_in_one_line(seeds: Path) -> None:
    lines = fuzzed("fuzz.py", *(seeds / f"{name}.mprof" for name in ("widgets", "cxx", "plugin")))
    # Every input through the reader; every fourth through one command in turn.
    assert lines[-1] == f"{INPUTS + (INPUTS + 3) // 4} passed, 0 failed"
    inputs, read, refused = counts(lines, "reader:")
    assert inputs == INPUTS and read > INPUTS // 20 and refused > INPUTS // 20
    # Some mutations must get through to a report, or the run proved little.
    for command in ("report", "json", "db", "html"):
        runs, reported, refused = counts(lines, f"{command}:")
        assert reported > runs // 20 and refused > runs // 20, lines


def test_mutated_traces_are_prepared_or_refused_in_one_line(seeds: Path) -> None:
    lines = fuzzed("fuzz_trace.py", *(seeds / f"{name}.mprof.trace" for name in ("widgets", "cxx", "threads")))
    assert lines[-1] == f"{INPUTS} passed, 0 failed"
    inputs, prepared, refused = counts(lines, "prepare:")
    assert inputs == INPUTS and prepared > INPUTS // 20 and refused > INPUTS // 20
    played, figures, _ = counts(lines, "run --null:")
    assert figures > played // 2 > 0


def test_mutated_suppressions_are_read_or_refused_in_one_line(seeds: Path) -> None:
    lines = fuzzed("fuzz_suppressions.py", seeds / "threads.db")
    assert lines[-1] == f"{INPUTS} passed, 0 failed"
    inputs, read, refused = counts(lines, "reader:")
    assert inputs == INPUTS and read > INPUTS // 20 and refused > INPUTS // 20
    reports, suppressing, *_ = counts(lines, "report:")
    assert reports == read and suppressing > reports // 20
