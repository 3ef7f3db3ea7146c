"""mprof's benchmark suite: each workload under each tool, interleaved
round by round (A B C ... A B C ...), so that a noisy, shared machine
slows every tool alike; medians and per-round ratios to the baseline.

    python3 bench/run.py [--quick] [--rounds N] [--massif] [--only NAME,...] [--before LIBMPROF]
    python3 bench/run.py --reduction FILE|cc1plus|million_paths ... [--targets CASE] [--rounds N]

Prints a markdown table, what `mprof run` adds to the start of a program
(bench/startup.py) and what the leak scan costs at a program's end
(bench/leak_scan.py), and writes bench/results/latest.json.  Then
what the reducer and the reports cost (bench/reduction.py) on cc1plus's
data file and on one of a million distinct call paths, beside issue 31's
targets, and the run figures the issue sets targets for.  --reduction
measures only that, on the files named (cc1plus, million_paths: made now,
once, with the tree's monitor), and writes no results file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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

import measured  # noqa: E402
import reduction  # noqa: E402
from leak_scan import measure as measure_leak_scan  # noqa: E402
from startup import measure as measure_startup  # noqa: E402
from workloads import Workload, compile_workload, workloads  # noqa: E402

from mprof.reducer import datafile  # noqa: E402

BENCH_BUILD = BUILD / "bench"
# The threaded workloads run as many threads as the machine has cores.
CORES = os.cpu_count() or 1
# Below this many live blocks the monitor's fixed memory (its code, libunwind,
# its caches) outweighs what it keeps per block, and the ratio means nothing.
PER_OBJECT_MIN_LIVE = 100_000
# Runs of mprof run -- /bin/true, and of /bin/true alone, interleaved.
STARTUP_RUNS = 100
# Where the reduction cases' data files stay after make bench, for
# `--reduction` to measure again without making them anew.
DATA = BENCH_BUILD / "data"
# The synthetic profile's distinct call paths (bench/programs/wide_tree.c).
MILLION = 1_000_000
# The address space of a tool a workload runs once (Workload.once): enough
# for any tool that works, and the end of one that grows without bound
# before it takes the machine's memory from everything else on it.
ONCE_ADDRESS_SPACE = 4 << 30


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
    growing = str(int(4_000_000 * scale))  # half of them kept: 400 MB at the end
    objects = str(int(10_000_000 * scale))
    threaded = str(BENCH_BUILD / "widgets_threads")
    cores = str(CORES)
    own = [
        Workload("widgets", [str(BUILD / "widgets"), widgets]),
        Workload("widgets depth 50", [str(BENCH_BUILD / "widgets_deep"), str(int(4_000_000 * scale)), "50"]),
        Workload(f"widgets {cores} threads", [threaded, widgets, cores]),
        Workload("widgets 1 thread", [threaded, widgets, "1"]),
        Workload(f"widgets {cores} threads handoff", [threaded, widgets, cores, "handoff"]),
        Workload("widgets 1 thread handoff", [threaded, widgets, "1", "handoff"]),
        # Live memory that grows all along, in every thread at once (issue 32).
        Workload(f"widgets {cores} threads grow", [threaded, growing, cores, "grow"]),
        Workload("widgets 1 thread grow", [threaded, growing, "1", "grow"]),
        # A program's own arena beside malloc (issue 33): the API compiled
        # in, and its objects from malloc instead.
        Workload("objects", [str(BENCH_BUILD / "objects"), objects]),
        Workload("objects annotated", [str(BENCH_BUILD / "objects_annotated"), objects]),
        Workload("objects from malloc", [str(BENCH_BUILD / "objects_malloc"), objects]),
    ]
    debian = workloads(directory, scale)
    if quick:
        debian = [w for w in debian if w.name in ("gawk", "sqlite3")]
    else:  # a compile takes minutes under the slower tools
        debian.append(compile_workload(directory))
    return own + debian


def selected(name: str, only: str) -> bool:
    """Whether --only names this workload or case (an underscore for a space)."""
    return not only or name in {part.replace("_", " ") for part in only.split(",")}


@dataclass
class Measurement:
    seconds: float
    cpu_seconds: float  # user + system of the process and the children it waited for
    peak_rss_kb: int
    file_bytes: int = 0
    max_live_objects: int = 0
    trace_bytes: int = 0
    trace_events: int = 0
    exit_status: int = 0  # not 0 only where the run may fail


def trace_events(path: Path) -> int:
    """The event count of a trace's end block, its last 16 bytes (mprof(5))."""
    with path.open("rb") as trace:
        trace.seek(-16, os.SEEK_END)
        return int.from_bytes(trace.read(8), "little")


def run_once(tool: Tool, workload: Workload, output: Path) -> Measurement:
    """One run.  A tool the workload runs once runs in a bounded address
    space, and may fail."""
    command, env = tool.command(workload, output)
    once = tool.name in workload.once
    run = measured.run(command, env, workload.stdin, ONCE_ADDRESS_SPACE if once else None)
    if run.exit_status != 0 and not once:
        raise RuntimeError(f"{workload.name} under {tool.name} failed ({run.exit_status}: {run.errors}): {command}")
    measurement = Measurement(run.seconds, run.cpu_seconds, run.peak_rss_kb, exit_status=run.exit_status)
    if run.exit_status != 0:
        return measurement
    files = written(output)
    if files:
        measurement.file_bytes = files[0].stat().st_size
        if tool.name in ("mprof", "mprof-"):  # an earlier build may write an earlier format
            measurement.max_live_objects = datafile.read(files[0]).summary.max_live_objects
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
    runs: int = 0  # fewer than the rounds for a tool the workload runs once (Workload.once)
    failed: str | None = None  # how a tool the workload runs once failed


def written(output: Path) -> list[Path]:
    """The data files a run writing to output left, not its traces."""
    return sorted(path for path in output.parent.glob(output.name + "*") if ".trace" not in path.name)


def measure(workload: Workload, chosen: list[Tool], rounds: int, directory: Path) -> tuple[list[Row], list[Path]]:
    """The workload's rows, and mprof's data file of each round (the largest
    each run wrote: a program's children write theirs too)."""
    results: dict[str, list[Measurement]] = {t.name: [] for t in chosen}
    outputs: dict[str, Path] = {}
    mprof_files: list[Path] = []
    for round_number in range(rounds):
        for tool in chosen:
            if round_number and tool.name in workload.once:
                continue
            output = directory / f"{workload.name.replace(' ', '_')}.{tool.name.replace(' ', '_')}.{round_number}"
            for stale in output.parent.glob(output.name + "*"):
                stale.unlink()
            results[tool.name].append(run_once(tool, workload, output))
            if not results[tool.name][-1].exit_status:  # a failed run's file is no profile to reduce
                outputs[tool.name] = output
            if tool.name == "mprof" and written(output):
                mprof_files.append(max(written(output), key=lambda path: path.stat().st_size))
    baseline = results["none"]
    rows = []
    for tool in chosen:
        runs = results[tool.name]
        # A tool run once is compared with the same round's baseline.
        ratios = [run.seconds / base.seconds for run, base in zip(runs, baseline[:len(runs)], strict=True)]
        cpu_ratios = [run.cpu_seconds / base.cpu_seconds
                      for run, base in zip(runs, baseline[:len(runs)], strict=True)]
        per_object = None
        live = max(run.max_live_objects for run in runs)
        if live >= PER_OBJECT_MIN_LIVE:
            extra_kb = (statistics.median(r.peak_rss_kb for r in runs)
                        - statistics.median(b.peak_rss_kb for b in baseline))
            per_object = extra_kb * 1024 / live
        rows.append(Row(workload.name, tool.name, statistics.median(r.seconds for r in runs),
                        statistics.median(ratios), statistics.median(cpu_ratios), runs[-1].file_bytes,
                        int(statistics.median(r.peak_rss_kb for r in runs)), per_object, runs=len(runs)))
        failures = [run for run in runs if run.exit_status]
        if failures:
            rows[-1].failed = (f"exit status {failures[0].exit_status} after {failures[0].seconds:.0f} s, "
                               f"{failures[0].peak_rss_kb / 1024:,.0f} MB resident "
                               f"(address space bounded to {ONCE_ADDRESS_SPACE >> 30} GB)")
        if runs[-1].trace_events:
            rows[-1].trace_bytes = runs[-1].trace_bytes
            rows[-1].trace_bytes_per_event = runs[-1].trace_bytes / runs[-1].trace_events
            if "mprof" in results:
                rows[-1].over_mprof = statistics.median(
                    run.seconds / plain.seconds for run, plain in zip(runs, results["mprof"][:len(runs)], strict=True))
    # Reduction: mprof's reducer against heaptrack_print on the last round's files, interleaved.
    mprof_file = next(iter(written(outputs["mprof"])), None)
    heaptrack_file = next(iter(written(outputs["heaptrack"]) if "heaptrack" in outputs else []), None)
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
    return rows, mprof_files


def table(rows: list[Row]) -> str:
    rounds = max(r.runs for r in rows)
    lines = ["| workload | tool | median s | slowdown | CPU slowdown | data file | peak RSS | B/live object "
             "| reduce s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        per_object = f"{r.bytes_per_live_object:.1f}" if r.bytes_per_live_object is not None else ""
        reduce = f"{r.reduce_seconds:.2f}" if r.reduce_seconds is not None else ""
        size = f"{r.file_bytes / 1024:,.1f} KB" if r.file_bytes and not r.failed else ""
        tool = r.tool + (f" ({r.runs} run{'s' if r.runs > 1 else ''})" if 0 < r.runs < rounds else "")
        slowdown, cpu_slowdown = ("failed", "") if r.failed else (f"{r.slowdown:.2f}x", f"{r.cpu_slowdown:.2f}x")
        lines.append(f"| {r.workload} | {tool} | {r.median_seconds:.2f} | {slowdown} | "
                     f"{cpu_slowdown} | {size} | "
                     f"{r.peak_rss_kb / 1024:,.1f} MB | {per_object} | {reduce} |")
    failures = [f"{r.workload} under {r.tool} failed: {r.failed}" for r in rows if r.failed]
    return "\n".join(lines + ([""] + failures if failures else []))


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
    for suffix in ("", " handoff", " grow"):
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


@dataclass
class Check:
    issue: int
    workload: str
    measure: str
    value: str
    target: str
    met: bool | None  # None: nothing to hold it to


# Issue 31's targets for the run itself: mprof's slowdown on cc1plus,
# python3 and sqlite3, and at most half of heaptrack's overhead on each;
# python3's data file no larger than today's.
SLOWDOWN_TARGETS = {"cc1plus": 1.3, "python3": 1.3, "sqlite3": 1.4}
PYTHON_FILE_TARGET = 256 * 1024


def run_targets(rows: list[Row]) -> list[Check]:
    by_key = {(r.workload, r.tool): r for r in rows}
    checks = []
    for workload, limit in SLOWDOWN_TARGETS.items():
        mprof = by_key.get((workload, "mprof"))
        if mprof is None:
            continue
        checks.append(Check(31, workload, "mprof slowdown", f"{mprof.slowdown:.2f}x", f"≤{limit:g}x",
                            mprof.slowdown <= limit))
        heaptrack = by_key.get((workload, "heaptrack"))
        if heaptrack is not None and heaptrack.failed:
            checks.append(Check(31, workload, "mprof slowdown, half of heaptrack's overhead", f"{mprof.slowdown:.2f}x",
                                "heaptrack failed", None))
        elif heaptrack is not None:
            half = 1 + (heaptrack.slowdown - 1) / 2
            checks.append(Check(31, workload, "mprof slowdown, half of heaptrack's overhead", f"{mprof.slowdown:.2f}x",
                                f"≤{half:.2f}x (heaptrack {heaptrack.slowdown:.2f}x)", mprof.slowdown <= half))
    python = by_key.get(("python3", "mprof"))
    if python is not None:
        checks.append(Check(31, "python3", "mprof data file", f"{python.file_bytes / 1024:,.1f} KB",
                            f"≤{PYTHON_FILE_TARGET // 1024} KB", python.file_bytes <= PYTHON_FILE_TARGET))
    return checks


# Issue 32's: a thread per core speeds up under mprof within 10% of how it
# speeds up without a profiler, memory growing or not.
SCALING_TARGET = 0.9


def thread_targets(rows: list[Row]) -> list[Check]:
    by_key = {(r.workload, r.tool): r for r in rows}
    checks = []
    for suffix in ("", " handoff", " grow"):
        many, one = f"widgets {CORES} threads{suffix}", f"widgets 1 thread{suffix}"
        keys = [(many, "none"), (one, "none"), (many, "mprof"), (one, "mprof")]
        if not all(key in by_key for key in keys):
            continue
        base, under = (by_key[(one, tool)].median_seconds / by_key[(many, tool)].median_seconds
                       for tool in ("none", "mprof"))
        checks.append(Check(32, many, "speed-up under mprof / without", f"{under:.2f}x / {base:.2f}x = "
                            f"{under / base:.2f}", f"≥{SCALING_TARGET:g}", under / base >= SCALING_TARGET))
    return checks


# Issue 33's: the pool API compiled into a malloc-heavy program costs it
# nothing without mprof, and a pool's objects cost no more under mprof than
# the same objects from malloc do; both within the machine's noise.
POOL_NOISE = 1.05


def pool_targets(rows: list[Row]) -> list[Check]:
    by_key = {(r.workload, r.tool): r for r in rows}
    checks = []
    plain, annotated = by_key.get(("objects", "none")), by_key.get(("objects annotated", "none"))
    if plain and annotated:
        ratio = annotated.median_seconds / plain.median_seconds
        checks.append(Check(33, "objects annotated", "without mprof / unannotated", f"{ratio:.2f}",
                            f"≤{POOL_NOISE:g}", ratio <= POOL_NOISE))
    keys = [("objects annotated", "none"), ("objects annotated", "mprof"), ("objects from malloc", "none"),
            ("objects from malloc", "mprof")]
    if all(key in by_key for key in keys):
        pools, malloc = (by_key[(workload, "mprof")].median_seconds - by_key[(workload, "none")].median_seconds
                         for workload in ("objects annotated", "objects from malloc"))
        checks.append(Check(33, "objects annotated", "mprof's overhead / with the objects from malloc",
                            f"{pools:.2f} s / {malloc:.2f} s = {pools / malloc:.2f}", f"≤{POOL_NOISE:g}",
                            pools / malloc <= POOL_NOISE))
    return checks


def checks_table(checks: list[Check]) -> str:
    if not checks:
        return ""
    met = {True: "yes", False: "**no**", None: ""}
    return "\n".join(["| issue | workload | run target | value | target | met |", "|---|---|---|---:|---:|---|",
                      *(f"| {c.issue} | {c.workload} | {c.measure} | {c.value} | {c.target} | {met[c.met]} |"
                        for c in checks)])


def million_paths() -> Workload:
    program = BENCH_BUILD / "wide_tree"
    if not program.exists():
        raise SystemExit(f"bench: no {program.relative_to(REPO_ROOT)}: make {program.relative_to(REPO_ROOT)}")
    return Workload("million paths", [str(program), str(MILLION)])


def make_data_file(case: str, workload: Workload) -> tuple[Path, list[reduction.Result]]:
    """One run of workload alone and one under mprof, whose data file (the
    largest the run wrote) stays in DATA; the two runs' rows."""
    DATA.mkdir(parents=True, exist_ok=True)
    output = DATA / f"{case.replace(' ', '_')}.mprof"
    for stale in DATA.glob(output.name + "*"):
        stale.unlink()
    rows = []
    for step, tool in (("run, no profiler", Tool("none")), ("run under mprof", Tool("mprof", BUILD / "libmprof.so"))):
        run = measured.run(*tool.command(workload, output))
        if run.exit_status:
            raise RuntimeError(f"{workload.name} {step}: exit status {run.exit_status}: {run.errors}")
        rows.append(reduction.Result(case, step, 1, run.seconds, run.peak_rss_kb))
    data = max(written(output), key=lambda path: path.stat().st_size)
    return data, rows


def reduce_only(names: list[str], targets: str | None, rounds: int) -> int:
    """--reduction: each file, or each case's file made now, measured alone."""
    results: list[reduction.Result] = []
    with tempfile.TemporaryDirectory(prefix="mprof-bench-") as scratch:
        directory = Path(scratch)
        for number, name in enumerate(names):
            case = name.replace("_", " ")
            if case in ("cc1plus", "million paths") and not Path(name).exists():
                print(f"bench: {case}: one run under mprof", file=sys.stderr, flush=True)
                workload = compile_workload(BENCH_BUILD / "inputs") if case == "cc1plus" else million_paths()
                data, runs = make_data_file(case, workload)
                results += runs
                chosen = reduction.TARGETS[case]
            else:
                data, case = Path(name), name
                chosen = reduction.TARGETS[targets] if targets else reduction.NO_TARGETS
            print(f"bench: reduction of {data}", file=sys.stderr, flush=True)
            results += reduction.measure(case, data, directory / str(number), rounds, chosen)
    print(reduction.table(results))
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a one-minute subset")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--massif", action="store_true", help="also valgrind massif (slow)")
    parser.add_argument("--only", default="",
                        help="comma-separated workload names (startup: mprof run's start; leak scan: the scan at exit)")
    parser.add_argument("--before", type=Path, metavar="LIBMPROF",
                        help="another build of the monitor (an earlier commit's build/libmprof.so) to measure in "
                             "the same rounds, as 'mprof before', beside this one without its leak scan")
    parser.add_argument("--reduction", nargs="+", metavar="FILE",
                        help="only measure the reducer and the reports on these data files or databases (cc1plus, "
                             "million_paths: such a file made now); no results file is written")
    parser.add_argument("--targets", choices=sorted(reduction.TARGETS),
                        help="the case whose targets --reduction holds the files named to")
    args = parser.parse_args(argv)
    if args.reduction:
        return reduce_only(args.reduction, args.targets, args.rounds)
    chosen = tools(args.massif, args.quick)
    if args.before:
        # The allocation path against the other monitor's alone: the leak
        # scan at the end (bench/leak_scan.py measures it) left out.
        chosen.append(Tool("mprof no leak scan", BUILD / "libmprof.so", {"MPROF_LEAK_CHECK": "0"}))
        chosen.append(Tool("mprof before", args.before.resolve()))
    rows: list[Row] = []
    reductions: list[reduction.Result] = []
    started = time.monotonic()
    startup = None
    if not args.only or "startup" in args.only.split(","):
        print("bench: mprof run's start-up", file=sys.stderr, flush=True)
        # A few seconds: as many runs for --quick, whose medians would
        # otherwise move with a busy machine.
        startup = measure_startup(STARTUP_RUNS)
    leak_scan = None
    if not args.only or "leak scan" in args.only.split(","):
        print("bench: the leak scan of 10 million blocks", file=sys.stderr, flush=True)
        leak_scan = measure_leak_scan(args.rounds)
    with tempfile.TemporaryDirectory(prefix="mprof-bench-") as scratch:
        directory = Path(scratch)
        inputs = REPO_ROOT / "build" / "bench" / "inputs"
        for workload in bench_workloads(inputs, args.quick):
            if not selected(workload.name, args.only):
                continue
            print(f"bench: {workload.name}", file=sys.stderr, flush=True)
            workload_rows, mprof_files = measure(workload, chosen, args.rounds, directory)
            rows += workload_rows
            if workload.name == "cc1plus" and mprof_files:
                print("bench: reduction of cc1plus's data file", file=sys.stderr, flush=True)
                DATA.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(mprof_files[-1], DATA / "cc1plus.mprof")
                reductions += reduction.measure("cc1plus", mprof_files[-1], directory / "cc1plus-reduction",
                                                args.rounds, reduction.TARGETS["cc1plus"], other=mprof_files[0])
        if args.quick:
            print("bench: --quick leaves out cc1plus and the million-path profile (minutes each)", file=sys.stderr)
        elif selected("million paths", args.only):
            print("bench: million paths: one run under mprof, then its reduction", file=sys.stderr, flush=True)
            data, runs = make_data_file("million paths", million_paths())
            reductions += runs + reduction.measure("million paths", data, directory / "million-reduction",
                                                   args.rounds, reduction.TARGETS["million paths"])
    if rows:
        print(table(rows))
    checks = run_targets(rows) + thread_targets(rows) + pool_targets(rows)
    for extra in (recording(rows), scaling(rows), checks_table(checks)):
        if extra:
            print("\n" + extra)
    if reductions:
        print("\n" + reduction.table(reductions))
    if startup is not None:
        print(("\n" if rows else "") + startup.line())
    if leak_scan is not None:
        print(leak_scan.line())
    results = REPO_ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    (results / "latest.json").write_text(json.dumps(
        {"rounds": args.rounds, "quick": args.quick, "seconds": time.monotonic() - started,
         "rows": [asdict(r) for r in rows],
         "run_targets": [asdict(c) for c in checks],
         "reduction": [asdict(r) for r in reductions],
         "startup": None if startup is None else asdict(startup) | {"within_limit": startup.within_limit},
         "leak_scan": None if leak_scan is None else asdict(leak_scan) | {"within_limit": leak_scan.within_limit}},
        indent=1) + "\n")
    print(f"\nbench: {time.monotonic() - started:.0f} s; results in bench/results/latest.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
