"""mprof's benchmark suite: each workload under each tool, interleaved
round by round (A B C ... A B C ...), so that a noisy, shared machine
slows every tool alike; medians and per-round ratios to the baseline.

    python3 bench/run.py [--quick] [--rounds N] [--massif] [--only NAME,...] [--before LIBMPROF]

Prints a markdown table, and what `mprof run` adds to the start of a
program (bench/startup.py), and writes bench/results/latest.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
BUILD = REPO_ROOT / "build"
# The scripts run from the tree, not installed: mprof from src/, the
# workloads beside this file.
sys.path[:0] = [str(REPO_ROOT / "src"), str(Path(__file__).resolve().parent)]

from startup import measure as measure_startup  # noqa: E402
from workloads import Workload, workloads  # noqa: E402

from mprof.reducer import datafile  # noqa: E402

BENCH_BUILD = BUILD / "bench"
# The threaded workloads run as many threads as the machine has cores.
CORES = os.cpu_count() or 1
# Below this many live blocks the monitor's fixed memory (its code, libunwind,
# its caches) outweighs what it keeps per block, and the ratio means nothing.
PER_OBJECT_MIN_LIVE = 100_000
# Runs of mprof run -- /bin/true, and of /bin/true alone, interleaved.
STARTUP_RUNS = 100


@dataclass(frozen=True)
class Tool:
    name: str
    preload: Path | None = None
    environment: dict[str, str] = field(default_factory=dict)
    wrapper: tuple[str, ...] = ()

    def command(self, workload: Workload, output: Path) -> tuple[list[str], dict[str, str]]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}
        env.update(workload.environment)
        env.update(self.environment)
        if self.preload:
            env["LD_PRELOAD"] = str(self.preload)
        if self.name.startswith("mprof"):
            env.update(MPROF_OUTPUT=str(output))
        env = {name: value.replace("{output}", str(output)) for name, value in env.items()}
        wrapper = [part.replace("{output}", str(output)) for part in self.wrapper]
        return [*wrapper, *workload.command], env


def tools(massif: bool, quick: bool) -> list[Tool]:
    chosen = [
        Tool("none"),
        Tool("noop floor", BENCH_BUILD / "floor-noop.so"),
        Tool("unw_backtrace floor", BENCH_BUILD / "floor-backtrace.so"),
        Tool("mprof", BUILD / "libmprof.so"),
        Tool("mprof-", BUILD / "libmprof.so", {"MPROF_CALL_GRAPH": "0"}),
        Tool("mprof --trace", BUILD / "libmprof.so", {"MPROF_TRACE": "{output}.trace"}),
        Tool("heaptrack", wrapper=("heaptrack", "-o", "{output}")),
    ]
    if quick:
        chosen = [t for t in chosen if t.name in ("none", "unw_backtrace floor", "mprof", "mprof-", "mprof --trace",
                                                  "heaptrack")]
    if massif:
        chosen.append(Tool("massif", wrapper=("valgrind", "--tool=massif", "--massif-out-file={output}")))
    return chosen


def bench_workloads(directory: Path, quick: bool) -> list[Workload]:
    scale = 0.2 if quick else 1.0
    widgets = str(int(10_000_000 * scale))
    threaded = str(BENCH_BUILD / "widgets_threads")
    cores = str(CORES)
    own = [
        Workload("widgets", [str(BUILD / "widgets"), widgets]),
        Workload("widgets depth 50", [str(BENCH_BUILD / "widgets_deep"), str(int(4_000_000 * scale)), "50"]),
        Workload(f"widgets {cores} threads", [threaded, widgets, cores]),
        Workload("widgets 1 thread", [threaded, widgets, "1"]),
        Workload(f"widgets {cores} threads handoff", [threaded, widgets, cores, "handoff"]),
        Workload("widgets 1 thread handoff", [threaded, widgets, "1", "handoff"]),
    ]
    debian = workloads(directory, scale)
    if quick:
        debian = [w for w in debian if w.name in ("gawk", "sqlite3")]
    return own + debian


@dataclass
class Measurement:
    seconds: float
    cpu_seconds: float  # user + system of the process and the children it waited for
    peak_rss_kb: int
    file_bytes: int = 0
    max_live_objects: int = 0
    trace_bytes: int = 0
    trace_events: int = 0


def trace_events(path: Path) -> int:
    """The event count of a trace's end block, its last 16 bytes (mprof(5))."""
    with path.open("rb") as trace:
        trace.seek(-16, os.SEEK_END)
        return int.from_bytes(trace.read(8), "little")


def run_once(tool: Tool, workload: Workload, output: Path) -> Measurement:
    command, env = tool.command(workload, output)
    stdin = workload.stdin.open("rb") if workload.stdin else subprocess.DEVNULL
    started = time.monotonic()
    process = subprocess.Popen(command, env=env, stdin=stdin, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.monotonic() - started
    if workload.stdin:
        stdin.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{workload.name} under {tool.name} failed: {command}")
    measurement = Measurement(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
    written = sorted(path for path in output.parent.glob(output.name + "*") if ".trace" not in path.name)
    if written:
        measurement.file_bytes = written[0].stat().st_size
        if tool.name in ("mprof", "mprof-"):  # an earlier build may write an earlier format
            measurement.max_live_objects = datafile.read(written[0]).summary.max_live_objects
    # Every process's trace: a shell script's children write theirs too.
    for trace in output.parent.glob(output.name + ".trace*"):
        measurement.trace_bytes += trace.stat().st_size
        measurement.trace_events += trace_events(trace)
    return measurement


def timed(command: list[str]) -> float:
    started = time.monotonic()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.monotonic() - started


@dataclass
class Row:
    workload: str
    tool: str
    median_seconds: float
    slowdown: float  # median over rounds of this round's time / the baseline's
    cpu_slowdown: float  # the same for CPU time, which other programs on the machine disturb less
    file_bytes: int
    peak_rss_kb: int
    bytes_per_live_object: float | None
    reduce_seconds: float | None = None
    trace_bytes: int = 0
    trace_bytes_per_event: float | None = None
    over_mprof: float | None = None  # median over rounds of this round's time / mprof's: what --trace adds


def measure(workload: Workload, chosen: list[Tool], rounds: int, directory: Path) -> list[Row]:
    results: dict[str, list[Measurement]] = {t.name: [] for t in chosen}
    outputs: dict[str, Path] = {}
    for round_number in range(rounds):
        for tool in chosen:
            output = directory / f"{workload.name.replace(' ', '_')}.{tool.name.replace(' ', '_')}.{round_number}"
            for stale in output.parent.glob(output.name + "*"):
                stale.unlink()
            results[tool.name].append(run_once(tool, workload, output))
            outputs[tool.name] = output
    baseline = results["none"]
    rows = []
    for tool in chosen:
        runs = results[tool.name]
        ratios = [run.seconds / base.seconds for run, base in zip(runs, baseline, strict=True)]
        cpu_ratios = [run.cpu_seconds / base.cpu_seconds for run, base in zip(runs, baseline, strict=True)]
        per_object = None
        live = max(run.max_live_objects for run in runs)
        if live >= PER_OBJECT_MIN_LIVE:
            extra_kb = (statistics.median(r.peak_rss_kb for r in runs)
                        - statistics.median(b.peak_rss_kb for b in baseline))
            per_object = extra_kb * 1024 / live
        rows.append(Row(workload.name, tool.name, statistics.median(r.seconds for r in runs),
                        statistics.median(ratios), statistics.median(cpu_ratios), runs[-1].file_bytes,
                        int(statistics.median(r.peak_rss_kb for r in runs)), per_object))
        if runs[-1].trace_events:
            rows[-1].trace_bytes = runs[-1].trace_bytes
            rows[-1].trace_bytes_per_event = runs[-1].trace_bytes / runs[-1].trace_events
            if "mprof" in results:
                rows[-1].over_mprof = statistics.median(
                    run.seconds / plain.seconds for run, plain in zip(runs, results["mprof"], strict=True))
    # Reduction: mprof's reducer against heaptrack_print on the last round's files, interleaved.
    mprof_file = next(iter(sorted(outputs["mprof"].parent.glob(outputs["mprof"].name + "*"))), None)
    heaptrack_file = next(iter(sorted(outputs["heaptrack"].parent.glob(outputs["heaptrack"].name + "*")))
                          if "heaptrack" in outputs else [], None)
    if mprof_file and heaptrack_file:
        mprof_times, heaptrack_times = [], []
        for _ in range(rounds):
            mprof_times.append(timed([str(REPO_ROOT / "mprof"), "db", str(mprof_file), "-o",
                                      str(directory / "reduce.db")]))
            heaptrack_times.append(timed(["heaptrack_print", str(heaptrack_file)]))
        for row in rows:
            if row.tool == "mprof":
                row.reduce_seconds = statistics.median(mprof_times)
            if row.tool == "heaptrack":
                row.reduce_seconds = statistics.median(heaptrack_times)
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| workload | tool | median s | slowdown | CPU slowdown | data file | peak RSS | B/live object "
             "| reduce s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        per_object = f"{r.bytes_per_live_object:.1f}" if r.bytes_per_live_object is not None else ""
        reduce = f"{r.reduce_seconds:.2f}" if r.reduce_seconds is not None else ""
        size = f"{r.file_bytes / 1024:,.1f} KB" if r.file_bytes else ""
        lines.append(f"| {r.workload} | {r.tool} | {r.median_seconds:.2f} | {r.slowdown:.2f}x | "
                     f"{r.cpu_slowdown:.2f}x | {size} | "
                     f"{r.peak_rss_kb / 1024:,.1f} MB | {per_object} | {reduce} |")
    return "\n".join(lines)


def recording(rows: list[Row]) -> str:
    """What mprof run --trace costs over mprof run, and the trace's size."""
    lines = [f"| {r.workload} | {r.over_mprof:.2f}x | {r.trace_bytes / 1024:,.1f} KB | "
             f"{r.trace_bytes / r.trace_bytes_per_event:,.0f} | {r.trace_bytes_per_event:.2f} |"
             for r in rows if r.over_mprof is not None and r.trace_bytes_per_event]
    if not lines:
        return ""
    return "\n".join(["| workload | --trace / mprof | trace | events | B/event |",
                      "|---|---:|---:|---:|---:|", *lines])


def scaling(rows: list[Row]) -> str:
    """Each tool's time with a thread per core over its time with one thread
    doing the same work, and that against the same ratio without a
    profiler: 1.00 when the tool costs the threads nothing that it does not
    cost one thread."""
    by_key = {(r.workload, r.tool): r for r in rows}
    lines = []
    for suffix in ("", " handoff"):
        many, one = f"widgets {CORES} threads{suffix}", f"widgets 1 thread{suffix}"
        if (many, "none") not in by_key or (one, "none") not in by_key:
            continue
        base = by_key[(many, "none")].median_seconds / by_key[(one, "none")].median_seconds
        for tool in [r.tool for r in rows if r.workload == many]:
            ratio = by_key[(many, tool)].median_seconds / by_key[(one, tool)].median_seconds
            lines.append(f"| {many} / {one} | {tool} | {ratio:.2f} | {ratio / base:.2f} |")
    if not lines:
        return ""
    return "\n".join([f"| threads ({CORES} cores) | tool | N threads / 1 thread | against no profiler |",
                      "|---|---|---:|---:|", *lines])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a one-minute subset")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--massif", action="store_true", help="also valgrind massif (slow)")
    parser.add_argument("--only", default="", help="comma-separated workload names (startup: mprof run's start)")
    parser.add_argument("--before", type=Path, metavar="LIBMPROF",
                        help="another build of the monitor (an earlier commit's build/libmprof.so) to measure in "
                             "the same rounds, as 'mprof before'")
    args = parser.parse_args(argv)
    chosen = tools(args.massif, args.quick)
    if args.before:
        chosen.append(Tool("mprof before", args.before.resolve()))
    rows: list[Row] = []
    started = time.monotonic()
    startup = None
    if not args.only or "startup" in args.only.split(","):
        print("bench: mprof run's start-up", file=sys.stderr, flush=True)
        # A few seconds: as many runs for --quick, whose medians would
        # otherwise move with a busy machine.
        startup = measure_startup(STARTUP_RUNS)
    with tempfile.TemporaryDirectory(prefix="mprof-bench-") as scratch:
        directory = Path(scratch)
        inputs = REPO_ROOT / "build" / "bench" / "inputs"
        for workload in bench_workloads(inputs, args.quick):
            if args.only and workload.name not in args.only.split(","):
                continue
            print(f"bench: {workload.name}", file=sys.stderr, flush=True)
            rows += measure(workload, chosen, args.rounds, directory)
    if rows:
        print(table(rows))
    for extra in (recording(rows), scaling(rows)):
        if extra:
            print("\n" + extra)
    if startup is not None:
        print(("\n" if rows else "") + startup.line())
    results = REPO_ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    (results / "latest.json").write_text(json.dumps(
        {"rounds": args.rounds, "quick": args.quick, "seconds": time.monotonic() - started,
         "rows": [asdict(r) for r in rows],
         "startup": None if startup is None else asdict(startup) | {"within_limit": startup.within_limit}},
        indent=1) + "\n")
    print(f"\nbench: {time.monotonic() - started:.0f} s; results in bench/results/latest.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
