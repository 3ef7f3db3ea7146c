"""What `mprof run` adds to a program's start: `mprof run -o FILE --
/bin/true` against `/bin/true` alone, interleaved run by run so that a
busy machine slows both alike; the difference of the medians, in ms.

    python3 bench/startup.py [--runs N] [--mprof LAUNCHER]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# What the README promises: mprof run costs a short program no more than this.
LIMIT_MS = 30.0
PROGRAM = "/bin/true"


@dataclass
class Startup:
    runs: int
    program_ms: float  # median of the program alone
    mprof_ms: float  # median of mprof run with it
    cost_ms: float  # mprof_ms - program_ms

    @property
    def within_limit(self) -> bool:
        return self.cost_ms <= LIMIT_MS

    def line(self) -> str:
        verdict = "within" if self.within_limit else "OVER"
        return (f"mprof run start-up: {self.cost_ms:.1f} ms over {PROGRAM} alone ({verdict} {LIMIT_MS:.0f} ms; "
                f"medians of {self.runs} runs each: {self.mprof_ms:.1f} ms against {self.program_ms:.1f} ms)")


def _time(command: list[str], environment: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - started) * 1000


def measure(runs: int, mprof: Path = REPO_ROOT / "mprof") -> Startup:
    # The user's environment, less a profiler's settings that would change
    # what either command does.
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith("MPROF_") and name != "LD_PRELOAD"}
    with tempfile.TemporaryDirectory(prefix="mprof-startup-") as directory:
        output = str(Path(directory) / "true.mprof")
        profiled = [str(mprof), "run", "-o", output, "--", PROGRAM]
        # One of each first: the page cache and Python's bytecode cache
        # warm, as they are for any command a user runs twice.
        _time([PROGRAM], environment)
        _time(profiled, environment)
        alone, under = [], []
        for _ in range(runs):
            alone.append(_time([PROGRAM], environment))
            under.append(_time(profiled, environment))
    program_ms, mprof_ms = statistics.median(alone), statistics.median(under)
    return Startup(runs, program_ms, mprof_ms, mprof_ms - program_ms)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--mprof", type=Path, default=REPO_ROOT / "mprof", metavar="LAUNCHER")
    args = parser.parse_args(argv)
    print(measure(args.runs, args.mprof).line())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
