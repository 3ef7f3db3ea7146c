"""What the tests of the fuzzers (tests/fuzz/) share: the real runs their
seeds come from, and a fuzzer's run within its budget.

In make check each fuzzer runs for its time budget (harness.Budget: a
minute, MPROF_FUZZ_SECONDS) and on at least the floor its test gives, so
that the shares the test judges it by mean something on any machine; with
MPROF_FUZZ_INPUTS (make fuzz) it tries exactly that many.  The line saying
how many inputs it tried goes into the summary pytest prints (conftest.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from e2e_support import BUILD, REPO_ROOT, Targets, monitor_env

FUZZ = REPO_ROOT / "tests" / "fuzz"
COUNT = int(os.environ.get("MPROF_FUZZ_INPUTS") or 0) or None
# Seconds per input a hang stands out against (each run has its own alarm
# of 20 s in the fuzzer): the whole run's timeout only catches a stuck worker.
SECONDS_PER_INPUT = 2


def seed_runs(targets: Targets, directory: Path, *names: str) -> Path:
    """Data files and traces (NAME.mprof, NAME.mprof.trace) of real runs:
    widgets, a C++ program, one that loads and unloads a plugin, one whose
    threads free each other's blocks with every function of the malloc
    family, an arena announced as a pool (a POOL section, objects under
    pool frames, a backing block) and one that maps memory itself (regions
    under [mmap] and [brk] frames)."""
    commands: dict[str, Callable[[], list[str | Path]]] = {
        "widgets": lambda: [BUILD / "widgets", "300"],
        "cxx": lambda: [targets.build("cxx")],
        "plugin": lambda: [targets.build("dlclose_main", "-ldl"),
                           targets.build("libplugin.so", source="plugin.c", shared=True)],
        "threads": lambda: [targets.build("trace_events"), "threads"],
        "arena": lambda: [targets.build("arena", f"-I{REPO_ROOT / 'monitor'}")],
        "mapped": lambda: [targets.build("mapped")]}
    for name in names:
        output = directory / f"{name}.mprof"
        subprocess.run([str(part) for part in commands[name]()], check=True, capture_output=True, timeout=120,
                       env=monitor_env(output, MPROF_TRACE=f"{output}.trace"))
    return directory


def fuzzed(script: str, least: int, record_property: Callable[[str, object], None],
           *arguments: str | Path) -> tuple[int, list[str]]:
    """The fuzzer's run: how many inputs it tried (all of MPROF_FUZZ_INPUTS,
    or at least `least`), and its lines; it must have passed."""
    budget = [] if COUNT else ["--least", str(least)]
    completed = subprocess.run([sys.executable, FUZZ / script, *budget, *map(str, arguments)], capture_output=True,
                               text=True, timeout=1800 + SECONDS_PER_INPUT * (COUNT or least))
    lines = completed.stdout.splitlines()
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    [tried] = [line for line in lines if re.match(r"\d+ inputs in [\d.]+ s", line)]
    record_property(script, tried)
    inputs = int(tried.split()[0])
    assert inputs == COUNT if COUNT else inputs >= least, tried
    return inputs, lines


def counts(lines: list[str], start: str) -> list[int]:
    """The numbers of the line that starts so."""
    line = next(line for line in lines if line.startswith(start))
    return [int(number) for number in re.findall(r"\d+", line)]
