"""What mprof's reducer and reports cost on one data file, beside issue
31's targets: the file's size, then the time and peak memory of `mprof
report`, `html`, `diff` and `db`, and of report, html, diff and export of
the database db wrote.  bench/run.py measures cc1plus's file and a
synthetic profile of a million distinct call paths this way, or the files
`--reduction` names.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from measured import run

REPO_ROOT = Path(__file__).resolve().parent.parent
MPROF = REPO_ROOT / "mprof"
MB = 1024 * 1024
# A step is repeated for a median only when one run is this quick: the
# million-path reductions take tens of seconds today, and one run of those
# moves less with a busy machine than a short run does.
REPEAT_BELOW_SECONDS = 5.0
# What a profile database starts with: `--reduction` takes one as well as data files.
SQLITE_MAGIC = b"SQLite format 3\0"


@dataclass(frozen=True)
class Target:
    seconds: float | None = None
    rss_mb: float | None = None


@dataclass(frozen=True)
class Targets:
    name: str
    file_bytes: int | None
    steps: dict[str, Target]


# Issue 31's targets.  cc1plus: a report in a second and 150 MB, html and a
# diff of two such files in 2 s, anything read from the database in 0.5 s,
# a data file of at most 1 MB.  A million paths: each reduction (report,
# html, db) in 20 s and 1 GB; diff reduces two files and has no target of
# its own.
TARGETS = {
    "cc1plus": Targets("cc1plus", 1 * MB, {
        "report": Target(1.0, 150), "html": Target(2.0), "diff": Target(2.0),
        "report .db": Target(0.5), "html .db": Target(0.5), "diff .db": Target(0.5), "export .db": Target(0.5),
    }),
    "million paths": Targets("million paths", None, {
        "report": Target(20.0, 1024), "html": Target(20.0, 1024), "db": Target(20.0, 1024),
    }),
}
NO_TARGETS = Targets("", None, {})


@dataclass
class Result:
    case: str
    step: str
    runs: int = 0
    median_seconds: float | None = None
    peak_rss_kb: int | None = None  # the largest of the runs': the target is a ceiling
    file_bytes: int | None = None
    target_seconds: float | None = None
    target_rss_mb: float | None = None
    target_bytes: int | None = None
    met: bool | None = None  # None where the issue sets no target
    error: str | None = None
    note: str = ""

    def judge(self) -> None:
        checks = []
        if self.target_seconds is not None and self.median_seconds is not None:
            checks.append(self.median_seconds <= self.target_seconds)
        if self.target_rss_mb is not None and self.peak_rss_kb is not None:
            checks.append(self.peak_rss_kb <= self.target_rss_mb * 1024)
        if self.target_bytes is not None and self.file_bytes is not None:
            checks.append(self.file_bytes <= self.target_bytes)
        if self.error:
            self.met = False if (self.target_seconds or self.target_rss_mb) else None
        elif checks:
            self.met = all(checks)


def is_database(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


@dataclass(frozen=True)
class Step:
    name: str
    command: list[str]
    writes: Path | None = None  # the file whose size the table shows


def steps(data: Path, other: Path, scratch: Path) -> list[Step]:
    """Each step, in order: db before the steps that read its database."""
    mprof = str(MPROF)
    database = data if is_database(data) else scratch / "profile.db"  # one given is measured, not rewritten
    page, page_db, pprof = scratch / "page.html", scratch / "page-db.html", scratch / "profile.pb.gz"
    from_database = [
        Step("report .db", [mprof, "report", "--no-pager", str(database)]),
        Step("html .db", [mprof, "html", str(database), "-o", str(page_db)], page_db),
        Step("diff .db", [mprof, "diff", "--no-pager", str(database), str(database)]),
        Step("export .db", [mprof, "export", "--format", "pprof", "-o", str(pprof), str(database)], pprof),
    ]
    if database == data:
        return from_database
    return [
        Step("report", [mprof, "report", "--no-pager", str(data)]),
        Step("html", [mprof, "html", str(data), "-o", str(page)], page),
        Step("diff", [mprof, "diff", "--no-pager", str(data), str(other)]),
        Step("db", [mprof, "db", str(data), "-o", str(database)], database),
        *from_database,
    ]


def measure(case: str, data: Path, scratch: Path, rounds: int, targets: Targets = NO_TARGETS,
            other: Path | None = None) -> list[Result]:
    """Every step on data (diff compares it with other, another run's file,
    or with itself), up to rounds times each."""
    scratch.mkdir(parents=True, exist_ok=True)
    size = Result(case, "database" if is_database(data) else "data file", file_bytes=data.stat().st_size,
                  target_bytes=None if is_database(data) else targets.file_bytes)
    size.judge()
    results = [size]
    for step in steps(data, other or data, scratch):
        name = step.name
        target = targets.steps.get(name, Target())
        result = Result(case, name, target_seconds=target.seconds, target_rss_mb=target.rss_mb)
        if name.startswith("diff"):
            result.note = "two runs' files" if other and other != data and name == "diff" else "against itself"
        seconds: list[float] = []
        peaks: list[int] = []
        while len(seconds) < rounds and (not seconds or seconds[0] < REPEAT_BELOW_SECONDS):
            measured = run(step.command)
            if measured.exit_status:
                result.error = f"exit status {measured.exit_status}: {measured.errors}"
                break
            seconds.append(measured.seconds)
            peaks.append(measured.peak_rss_kb)
        if seconds and not result.error:
            result.runs = len(seconds)
            result.median_seconds = statistics.median(seconds)
            result.peak_rss_kb = max(peaks)
            if step.writes:
                result.file_bytes = step.writes.stat().st_size
        result.judge()
        results.append(result)
        if result.error and name == "db":
            break  # nothing to read from
    return results


def _limit(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    return f"≤{value:g} {unit}"


def _size(size: int) -> str:
    return f"{size / MB:,.2f} MB" if size >= MB else f"{size / 1024:,.1f} KB"


def table(results: list[Result]) -> str:
    lines = ["| case | step | runs | median s | target | peak RSS | target | file | target | met |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        met = {True: "yes", False: "**no**", None: ""}[r.met]
        seconds = f"{r.median_seconds:.2f}" if r.median_seconds is not None else ("failed" if r.error else "")
        rss = f"{r.peak_rss_kb / 1024:,.0f} MB" if r.peak_rss_kb is not None else ""
        size = _size(r.file_bytes) if r.file_bytes is not None else ""
        target_size = _size(r.target_bytes).replace(".00 ", " ") if r.target_bytes is not None else ""
        step = r.step + (f" ({r.note})" if r.note else "")
        lines.append(f"| {r.case} | {step} | {r.runs or ''} | {seconds} | {_limit(r.target_seconds, 's')} | "
                     f"{rss} | {_limit(r.target_rss_mb, 'MB')} | {size} | "
                     f"{('≤' + target_size) if target_size else ''} | {met} |")
    failures = [f"{r.case} {r.step}: {r.error}" for r in results if r.error]
    notes = [f"Steps that took {REPEAT_BELOW_SECONDS:g} s or more ran once; the others' times are medians. "
             "Peak RSS: the largest process of the command (the resolver, a child, counted on its own)."]
    return "\n".join(lines + [""] + notes + failures)
