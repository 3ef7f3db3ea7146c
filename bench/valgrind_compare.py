"""Runs real programs under mprof and under valgrind's memcheck and compares
the totals: allocs, frees, bytes allocated, bytes still allocated at exit.

memcheck counts a realloc as one alloc and one free, and so does mprof's
summary; realloc(NULL, n) is an alloc, realloc(p, 0) a free, in both.  The
two agree exactly when the program behaves the same in both runs; a program
whose allocation sizes depend on heap addresses (python3) agrees on the
counts only.  So both runs see the same things: the same environment, the
same directory (mprof's data files go to another one: a Python program
lists its script's directory), and whatever the program caches on its first
run on a machine already there, from a run of its own before either.

    python3 bench/valgrind_compare.py [--scale 0.05] [--json FILE] [NAME...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# The scripts run from the tree, not installed: mprof from src/, the
# workloads beside this file.
sys.path[:0] = [str(REPO_ROOT / "src"), str(Path(__file__).resolve().parent)]

from workloads import Workload, workloads  # noqa: E402

from mprof.reducer import datafile  # noqa: E402

LIBMPROF = REPO_ROOT / "build" / "libmprof.so"


@dataclass(frozen=True)
class Totals:
    allocs: int
    frees: int
    bytes_allocated: int
    kept_bytes: int


@dataclass(frozen=True)
class Comparison:
    name: str
    mprof: Totals
    memcheck: Totals
    file_size: int
    address_dependent_sizes: bool

    @property
    def agree(self) -> bool:
        if self.address_dependent_sizes:
            return (self.mprof.allocs, self.mprof.frees) == (self.memcheck.allocs, self.memcheck.frees)
        return self.mprof == self.memcheck


def _base_environment(workload: Workload, output_pattern: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}
    env.update(workload.environment)
    # Inert under valgrind, read by the monitor; MPROF_ROOT_PID is given so
    # that the monitor has no reason to add it.  Children are followed (the
    # default): not following edits LD_PRELOAD, which the program would see.
    env.update(MPROF_OUTPUT=output_pattern, MPROF_ROOT_PID="1")
    return env


def client_environments(workload: Workload, directory: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The environments the program sees under valgrind, and under mprof.

    Programs copy their environment (gawk's ENVIRON, perl's %ENV, Python's
    os.environ), so the two runs must hand them the same variables with
    values of the same lengths.  valgrind adds variables of its own and its
    LD_PRELOAD: the mprof run gets those variables too, and an LD_PRELOAD
    padded with separators to the same length.
    """
    base = _base_environment(workload, str(_output_directory(directory) / f"{workload.name}.%p.mprof"))
    probe = subprocess.run(["valgrind", "-q", "--tool=memcheck", "/usr/bin/env", "-0"], env=base,
                           capture_output=True, check=True)
    seen = dict(entry.split(b"=", 1) for entry in probe.stdout.split(b"\0") if b"=" in entry)
    under_valgrind = {k.decode(): v.decode() for k, v in seen.items()}
    under_mprof = dict(under_valgrind)
    preload = str(LIBMPROF)
    padding = len(under_valgrind.get("LD_PRELOAD", "")) - len(preload)
    under_mprof["LD_PRELOAD"] = preload + ":" * max(padding, 0)
    return base, under_mprof


def _run(workload: Workload, prefix: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    stdin = workload.stdin.open() if workload.stdin else subprocess.DEVNULL
    try:
        return subprocess.run([*prefix, *workload.command], env=env, stdin=stdin, capture_output=True, text=True,
                              check=True)
    finally:
        if workload.stdin:
            stdin.close()


def under_mprof(workload: Workload, directory: Path, env: dict[str, str]) -> tuple[Totals, int]:
    outputs = _output_directory(directory)
    before = set(outputs.glob(f"{workload.name}.*.mprof"))
    _run(workload, [], env)
    [output] = set(outputs.glob(f"{workload.name}.*.mprof")) - before
    s = datafile.read(output).summary
    return Totals(s.allocs, s.frees, s.bytes_allocated, s.bytes_allocated - s.bytes_freed), output.stat().st_size


_HEAP = re.compile(r"total heap usage: ([\d,]+) allocs, ([\d,]+) frees, ([\d,]+) bytes allocated")
_IN_USE = re.compile(r"in use at exit: ([\d,]+) bytes in ([\d,]+) blocks")


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def under_memcheck(workload: Workload, env: dict[str, str]) -> Totals:
    # No freeres: mprof writes its file before libc would free its buffers.
    completed = _run(workload, ["valgrind", "--tool=memcheck", "--leak-check=no", "--run-libc-freeres=no",
                                "--run-cxx-freeres=no", "--trace-children=no"], env)
    heap, in_use = _HEAP.search(completed.stderr), _IN_USE.search(completed.stderr)
    if not heap or not in_use:
        raise RuntimeError(f"{workload.name}: no heap summary from valgrind:\n{completed.stderr[-2000:]}")
    allocs, frees, allocated = (_number(g) for g in heap.groups())
    return Totals(allocs, frees, allocated, _number(in_use.group(1)))


def _output_directory(run_directory: Path) -> Path:
    """Beside the directory the program runs in, not in it."""
    outputs = run_directory.parent / "mprof"
    outputs.mkdir(exist_ok=True)
    return outputs


def compare(names: list[str], scale: float, directory: Path) -> list[Comparison]:
    results = []
    directory = directory / "run"
    for workload in workloads(directory, scale):
        if names and workload.name not in names:
            continue
        valgrind_env, mprof_env = client_environments(workload, directory)
        _run(workload, [], valgrind_env)  # first-run caches: written now, seen by both runs
        mprof, size = under_mprof(workload, directory, mprof_env)
        results.append(Comparison(workload.name, mprof, under_memcheck(workload, valgrind_env), size,
                                  workload.address_dependent_sizes))
    return results


def table(results: list[Comparison]) -> str:
    lines = ["| program | tool | allocs | frees | bytes allocated | kept at exit | data file |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in results:
        for tool, totals in (("mprof", r.mprof), ("memcheck", r.memcheck)):
            size = f"{r.file_size:,} B" if tool == "mprof" else ""
            lines.append(f"| {r.name} | {tool} | {totals.allocs:,} | {totals.frees:,} | "
                         f"{totals.bytes_allocated:,} | {totals.kept_bytes:,} | {size} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="workloads to run (default: all)")
    parser.add_argument("--scale", type=float, default=0.05, help="input size, 1.0 = the benchmark's")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mprof-valgrind-") as directory:
        results = compare(args.names, args.scale, Path(directory))
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) | {"agree": r.agree} for r in results], indent=2) + "\n")
    disagreeing = [r.name for r in results if not r.agree]
    if disagreeing:
        print(f"mprof and memcheck disagree on: {', '.join(disagreeing)}", file=sys.stderr)
    return 1 if disagreeing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
