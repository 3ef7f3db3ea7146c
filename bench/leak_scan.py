"""What the leak scan costs at a process's end: bench/programs/leak_graph
(1 GiB live in 10 million blocks, its pointer graph described there) under
libmprof with the scan and without, interleaved run by run; the scan's own
time as the monitor measured it (LEAK's scan_ns), and the difference of the
runs' medians.  The figures are checked against what the program leaves:
nine lists in ten reachable, the tenth lost.

    python3 bench/leak_scan.py [--runs N] [--blocks N]
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
sys.path[:0] = [str(REPO_ROOT / "src")]

from mprof.reducer import datafile  # noqa: E402

# The target: 10 million blocks, 1 GiB, classified in this long.
LIMIT_S = 2.0
BLOCKS = 10_000_000
LISTS = 10  # as leak_graph.c makes them


@dataclass
class LeakScanCost:
    runs: int
    blocks: int
    scan_s: float  # median of LEAK's scan_ns
    with_s: float  # median run with the scan
    without_s: float  # median run without
    lost_blocks: int  # definitely and indirectly, of the last run
    reachable_blocks: int

    @property
    def within_limit(self) -> bool:
        return self.scan_s <= LIMIT_S

    def line(self) -> str:
        verdict = "within" if self.within_limit else "OVER"
        return (f"leak scan of {self.blocks:,} blocks: {self.scan_s:.2f} s ({verdict} {LIMIT_S:.0f} s), "
                f"the run {self.with_s - self.without_s:.2f} s longer (medians of {self.runs} runs each: "
                f"{self.with_s:.2f} s against {self.without_s:.2f} s); {self.lost_blocks:,} lost, "
                f"{self.reachable_blocks:,} reachable")


def _run(program: Path, blocks: int, output: Path, scan: bool) -> float:
    environment = dict(os.environ, LD_PRELOAD=str(REPO_ROOT / "build" / "libmprof.so"),
                       MPROF_OUTPUT=str(output), MPROF_LEAK_CHECK="1" if scan else "0")
    started = time.perf_counter()
    subprocess.run([str(program), str(blocks)], env=environment, stdin=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def measure(runs: int, blocks: int = BLOCKS) -> LeakScanCost:
    program = REPO_ROOT / "build" / "bench" / "leak_graph"
    with_scan: list[float] = []
    without: list[float] = []
    scans: list[float] = []
    lost = reachable = 0
    with tempfile.TemporaryDirectory(prefix="mprof-leak-scan-") as scratch:
        for run in range(runs):
            output = Path(scratch) / f"scan{run}"
            without.append(_run(program, blocks, Path(scratch) / f"plain{run}", False))
            with_scan.append(_run(program, blocks, output, True))
            leaks = datafile.read(output).leaks
            if leaks is None:
                raise SystemExit(f"bench: {output}: the blocks were not classified")
            scans.append(leaks.scan_ns / 1e9)
            totals = [sum(figures[i] for figures in leaks.kinds.values()) for i in range(8)]
            lost, reachable = totals[0] + totals[2], totals[6]
            per_list = blocks // LISTS
            if lost != per_list or reachable != per_list * (LISTS - 1) or totals[4]:
                raise SystemExit(f"bench: {output}: {lost} blocks lost and {reachable} reachable, "
                                 f"{totals[4]} possibly lost; the program loses {per_list} of {blocks}")
    return LeakScanCost(runs, blocks, statistics.median(scans), statistics.median(with_scan),
                        statistics.median(without), lost, reachable)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=BLOCKS)
    args = parser.parse_args(argv)
    print(measure(args.runs, args.blocks).line())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
