"""A short run of the mutation fuzzer (tests/fuzz/fuzz.py) over data files of
real runs: every mutated input gets a report or one line and a non-zero
exit, from report, report --format json, db and html.  The long run is
`python3 tests/fuzz/fuzz.py --inputs 100000 FILE...` (see its docstring)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from e2e_support import BUILD, REPO_ROOT, Targets, monitor_env


def test_mutated_data_files_get_a_report_or_one_line(targets: Targets, tmp_path: Path) -> None:
    seeds = [tmp_path / "widgets.mprof", tmp_path / "cxx.mprof", tmp_path / "plugin.mprof"]
    for seed, command in zip(seeds, ([BUILD / "widgets", "300"], [targets.build("cxx")],
                                     [targets.build("dlclose_main", "-ldl"),
                                      targets.build("libplugin.so", source="plugin.c", shared=True)]),
                             strict=True):
        subprocess.run([str(part) for part in command], env=monitor_env(seed), check=True, capture_output=True,
                       timeout=60)
    completed = subprocess.run([sys.executable, REPO_ROOT / "tests" / "fuzz" / "fuzz.py", "--inputs", "300",
                                *seeds], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert completed.stdout.splitlines()[-1] == "1200 passed, 0 failed"
    # Some mutations must get through to a report, or the run proved little.
    reported = [int(line.split(", ")[1].split()[0]) for line in completed.stdout.splitlines() if "reported" in line]
    assert len(reported) == 4 and all(count > 5 for count in reported)
