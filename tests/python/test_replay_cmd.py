"""mprof replay: the papers' figures computed by hand from made-up
measurements, the table's exact layout, and the command run as a user runs
it against the real build/mprof-replay and the real allocators (Gloger's
synthetic workload, so that nothing depends on the monitor); its database
rows, and its page opened in a real headless Chromium."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mprof.cli.main import main
from mprof.reducer.errors import MprofError
from mprof.replay import allocators, database, text
from mprof.replay.figures import (
    AllocatorResult,
    Comparison,
    Figures,
    Replay,
    Workload,
    check,
    figures_of,
    median,
    result,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
MPROF = REPO_ROOT / "mprof"
REPLAYER = REPO_ROOT / "build" / "mprof-replay"
OPERATIONS = "20000"

WORKLOAD = {"events": 10, "threads": 1, "allocations": 4, "frees": 4, "reallocs": 2, "bytes_allocated": 4000,
            "peak_live_bytes": 2000, "peak_live_blocks": 2, "unmatched_frees": 0, "duration_ns": 1_500_000_000,
            "max_size": 1000, "live_digest": 12345}


def measured(**changes: Any) -> dict[str, Any]:
    """A replay's JSON as mprof-replay prints it, with changes."""
    replay = {"allocator_library": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "order": "threads",
              "events": 10, "allocations": 4, "frees": 4, "reallocs": 2, "bytes_allocated": 4000,
              "peak_live_bytes": 2000, "peak_live_blocks": 2, "live_digest": None, "wall_ns": 3_000_000,
              "user_ns": 2_000_000, "system_ns": 1_000_000, "alloc_ns": 1200, "realloc_ns": 300, "free_ns": 100,
              "baseline_resident_bytes": 1 << 20, "baseline_mapped_bytes": 1 << 24, "peak_resident_bytes": 5000,
              "peak_mapped_bytes": 9000, "live_at_peak_bytes": 2000,
              "samples": [[0, 0, 0, 0], [5, 1000, 4000, 8000], [10, 2000, 5000, 9000]]}
    replay.update(changes)
    return replay


def replay(**changes: Any) -> Replay:
    return Replay.from_json(measured(**changes), "test")


def null(**changes: Any) -> Replay:
    return replay(**{"allocator_library": "null", "alloc_ns": 400, "realloc_ns": 100, "free_ns": 200, **changes})


# ---- The figures, by hand ----

def test_one_replay_figures_by_hand() -> None:
    figures = figures_of(replay(), null())
    # ns per call: (1200 - 400) / 4 allocations, (300 - 100) / 2 reallocs;
    # frees took 100 ns against the do-nothing replay's 200: clamped to 0.
    assert figures.ns_per_malloc == 200.0
    assert figures.ns_per_realloc == 100.0
    assert figures.ns_per_free == 0.0
    # Gloger's waste at peak: 1 - 2000 live / 5000 resident.
    assert figures.waste_at_peak == pytest.approx(0.6)
    # Average waste over the samples with memory resident (the first has
    # none): (1 - 1000/4000 + 1 - 2000/5000) / 2 = (0.75 + 0.6) / 2.
    assert figures.average_waste == pytest.approx(0.675)
    # Detlefs' heap expansion: 5000 resident at peak / 2000 live at most.
    assert figures.heap_expansion == 2.5
    assert (figures.user_ns, figures.system_ns, figures.peak_resident_bytes, figures.peak_mapped_bytes,
            figures.live_at_peak_bytes) == (2_000_000, 1_000_000, 5000, 9000, 2000)


def test_undefined_figures_are_none() -> None:
    figures = figures_of(replay(reallocs=0, peak_resident_bytes=0, peak_live_bytes=0,
                                samples=[[0, 0, 0, 0], [10, 0, 0, 0]]), null())
    assert (figures.ns_per_realloc, figures.waste_at_peak, figures.average_waste, figures.heap_expansion) == (
        None, None, None, None)


def test_medians_of_three_with_each_round_its_own_null() -> None:
    runs = [replay(alloc_ns=1200, user_ns=3, peak_resident_bytes=8000),
            replay(alloc_ns=2000, user_ns=1, peak_resident_bytes=4000),
            replay(alloc_ns=900, user_ns=2, peak_resident_bytes=5000)]
    nulls = [null(), null(alloc_ns=800), null(alloc_ns=500)]
    allocator = result("jemalloc", runs, nulls)
    # Per call: (1200-400)/4 = 200, (2000-800)/4 = 300, (900-500)/4 = 100.
    assert [row.ns_per_malloc for row in allocator.figures] == [200.0, 300.0, 100.0]
    assert allocator.median.ns_per_malloc == 200.0
    assert allocator.median.user_ns == 2
    assert allocator.median.peak_resident_bytes == 5000
    # The run whose peak is the median, 5000, is the third: its samples stand for the allocator.
    assert allocator.median_run == 2
    assert allocator.library == "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
    # Each figure's median on its own: heap expansion 8000/2000, 4000/2000, 5000/2000.
    assert allocator.median.heap_expansion == 2.5


def test_median_of_an_even_count_is_the_lower_middle() -> None:
    rows = [figures_of(replay(peak_resident_bytes=size), null()) for size in (4000, 6000, 5000, 9000)]
    assert median(rows).peak_resident_bytes == 5000


def test_a_replay_that_differs_from_the_trace_is_refused() -> None:
    workload = Workload.from_json(WORKLOAD, "test")
    check(replay(), workload, "threads", "jemalloc replay 1")
    with pytest.raises(MprofError, match="jemalloc replay 1: replayed frees 3, the trace has 4"):
        check(replay(frees=3), workload, "threads", "jemalloc replay 1")
    with pytest.raises(MprofError, match="replayed peak live bytes 2100, the trace has 2000"):
        check(replay(peak_live_bytes=2100), workload, "threads", "x")
    # Threads of their own interleave their own way: their peak may differ.
    several = Workload.from_json({**WORKLOAD, "threads": 2}, "test")
    check(replay(peak_live_bytes=2100), several, "threads", "x")
    with pytest.raises(MprofError, match="peak live bytes"):
        check(replay(peak_live_bytes=2100, order="recorded"), several, "recorded", "x")
    with pytest.raises(MprofError, match="live bytes after some event"):
        check(replay(order="recorded", live_digest=1), workload, "recorded", "x")


def test_bad_replayer_output_is_an_error() -> None:
    with pytest.raises(MprofError, match="no whole number 'alloc_ns'"):
        Replay.from_json(measured(alloc_ns="fast"), "test")
    with pytest.raises(MprofError, match="a sample is not four whole numbers"):
        Replay.from_json(measured(samples=[[1, 2, 3]]), "test")


# ---- The table ----

def hand_workload() -> Workload:
    return Workload(events=2005000, threads=2, allocations=1000000, frees=998000, reallocs=7000,
                    bytes_allocated=123, peak_live_bytes=1578758, peak_live_blocks=3, unmatched_frees=0,
                    duration_ns=81_547_800_000, max_size=1000, live_digest=5)


def hand_figures() -> list[tuple[str, Figures]]:
    glibc = Figures(wall_ns=2_000_000_000, user_ns=1_234_000_000, system_ns=12_000_000, ns_per_malloc=45.75,
                    ns_per_realloc=None, ns_per_free=0.0, peak_resident_bytes=12_345_678,
                    peak_mapped_bytes=20_000_000, live_at_peak_bytes=10_000_000, waste_at_peak=0.19,
                    average_waste=0.125, heap_expansion=1.25)
    jemalloc = Figures(wall_ns=1, user_ns=987_654_321, system_ns=0, ns_per_malloc=None, ns_per_realloc=None,
                       ns_per_free=3.0, peak_resident_bytes=9_000_000, peak_mapped_bytes=123_456_789,
                       live_at_peak_bytes=8_000_000, waste_at_peak=None, average_waste=-0.05, heap_expansion=10.5)
    return [("glibc", glibc), ("jemalloc", jemalloc)]


def test_the_text_table_layout() -> None:
    assert text.render("py.mprof.trace", "threads", 3, hand_workload(), hand_figures()) == (
        "Replay of py.mprof.trace: 2 threads, replayed in the threads order, medians of 3 replays\n"
        "\n"
        "Operations    2005000\n"
        "malloc        1000000\n"
        "free           998000\n"
        "realloc          7000\n"
        "max. size     1578758\n"
        "time        81.5478 s\n"
        "\n"
        "Implement.   User    Sys  ns/malloc  ns/free   Peak  Live at peak  Waste at peak  Average waste"
        "  Heap expansion  Mapped\n"
        "               /s     /s                        /MB           /MB             /%             /%"
        "             (x)     /MB\n"
        "glibc       1.234  0.012       45.8      0.0  12.35         10.00           19.0           12.5"
        "            1.25   20.00\n"
        "jemalloc    0.988  0.000          -      3.0   9.00          8.00              -           -5.0"
        "           10.50  123.46\n"
        "\n"
        "ns/malloc and ns/free: less the do-nothing replay's; Peak: resident set; MB: 10^6 bytes.\n")


# ---- Allocators ----

def test_a_missing_library_names_its_package(tmp_path: Path) -> None:
    with pytest.raises(MprofError) as caught:
        allocators.find("tcmalloc", [tmp_path])
    assert str(caught.value) == ("tcmalloc: libtcmalloc_minimal.so.4 not found: install Debian's "
                                 "libtcmalloc-minimal4 (make setup installs it)")


def test_a_missing_library_is_one_line_before_any_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(allocators, "library_directories", lambda: [tmp_path])
    # A replayer that would leave a mark if it were run at all.
    monkeypatch.setenv("MPROF_REPLAY", str(tmp_path / "no-such-replayer"))
    assert main(["replay", "--synthetic", "--allocators", "glibc,mimalloc"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "mprof: mimalloc: libmimalloc.so.2 not found: install Debian's libmimalloc2.0 (make setup " \
                  "installs it)\n"


def test_the_library_a_replay_ran_against_is_checked(tmp_path: Path) -> None:
    library = tmp_path / "libjemalloc.so.2"
    library.write_bytes(b"")
    jemalloc = allocators.Allocator("jemalloc", library)
    allocators.check_library(jemalloc, str(library), "jemalloc replay 1")
    with pytest.raises(MprofError, match="jemalloc replay 1: the replay's malloc came from .*libc.so.6, not "):
        allocators.check_library(jemalloc, "/lib/x86_64-linux-gnu/libc.so.6", "jemalloc replay 1")
    allocators.check_library(allocators.Allocator("glibc", None), "/lib/x86_64-linux-gnu/libc.so.6", "x")
    with pytest.raises(MprofError, match="not glibc's"):
        allocators.check_library(allocators.Allocator("glibc", None), str(library), "x")


def test_the_preload_is_the_allocator_alone() -> None:
    jemalloc = allocators.Allocator("jemalloc", Path("/lib/libjemalloc.so.2"))
    base = {"LD_PRELOAD": "/build/libmprof.so", "HOME": "/root"}
    assert allocators.environment(jemalloc, base) == {"LD_PRELOAD": "/lib/libjemalloc.so.2", "HOME": "/root"}
    assert allocators.environment(allocators.Allocator("glibc", None), base) == {"HOME": "/root"}
    assert allocators.environment(None, base) == {"HOME": "/root"}


def test_allocator_names() -> None:
    assert allocators.names("mimalloc, glibc,mimalloc") == ("mimalloc", "glibc")
    with pytest.raises(ValueError, match="choose from glibc, jemalloc, tcmalloc, mimalloc"):
        allocators.names("hoard")


# ---- The command, against the real replayer ----

def mprof(*arguments: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MPROF), *map(str, arguments)], capture_output=True, text=True, timeout=600,
                          env={key: value for key, value in os.environ.items() if key != "MPROF_REPLAY"})


@pytest.fixture(scope="module")
def replayer() -> None:
    if not REPLAYER.is_file():
        pytest.fail(f"{REPLAYER} is missing: run make build/mprof-replay")


def assert_one_error_line(completed: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert completed.returncode == 1
    assert completed.stdout == ""
    lines = completed.stderr.splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith("mprof: ")
    for needle in needles:
        assert needle in lines[0]


def test_a_trace_that_does_not_exist(replayer: None, tmp_path: Path) -> None:
    missing = tmp_path / "missing.trace"
    assert_one_error_line(mprof("replay", missing), str(missing))


def test_a_file_that_is_no_trace(replayer: None, tmp_path: Path) -> None:
    bad = tmp_path / "bad.trace"
    bad.write_bytes(b"MPROFTRC" + bytes(20))
    assert_one_error_line(mprof("replay", bad), str(bad))


def test_usage_errors(tmp_path: Path) -> None:
    assert_one_error_line(mprof("replay"), "--synthetic")
    assert_one_error_line(mprof("replay", tmp_path / "x.trace", "--seed", "3"), "--seed: only with --synthetic")
    assert mprof("replay", "--synthetic", "--allocators", "hoard").returncode == 2
    not_a_database = tmp_path / "notes.txt"
    not_a_database.write_text("notes\n")
    # Refused at once, not after minutes of replays.
    assert_one_error_line(mprof("replay", "--synthetic", "--db", not_a_database), str(not_a_database),
                          "not a readable profile database")


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory, replayer: None) -> tuple[dict[str, Any], Path, Path]:
    """One real comparison of every allocator: its JSON, its database, its page."""
    directory = tmp_path_factory.mktemp("replay")
    db, page = directory / "replay.db", directory / "replay.html"
    completed = mprof("replay", "--synthetic", "--operations", OPERATIONS, "--repeat", "3", "--format", "json",
                      "--db", db, "--html", page)
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    return json.loads(completed.stdout), db, page


def test_json_output(synthetic: tuple[dict[str, Any], Path, Path]) -> None:
    output, _, _ = synthetic
    assert set(output) == {"source", "synthetic", "order", "repeat", "workload", "null", "allocators"}
    assert output["source"] == f"synthetic --operations {OPERATIONS} --seed 1 --max-size 1000"
    assert (output["synthetic"], output["order"], output["repeat"]) == (True, "threads", 3)
    workload = output["workload"]
    assert set(workload) == {"events", "threads", "allocations", "frees", "reallocs", "bytes_allocated",
                             "peak_live_bytes", "peak_live_blocks", "unmatched_frees", "duration_ns", "max_size",
                             "live_digest"}
    assert workload["events"] == int(OPERATIONS)
    assert 0 < workload["max_size"] <= 1000
    assert len(output["null"]) == 3
    assert [allocator["name"] for allocator in output["allocators"]] == list(allocators.DEFAULT)
    for allocator in output["allocators"]:
        assert set(allocator) == {"name", "library", "median", "median_round", "runs", "samples"}
        assert set(allocator["median"]) == {
            "wall_ns", "user_ns", "system_ns", "ns_per_malloc", "ns_per_realloc", "ns_per_free",
            "peak_resident_bytes", "peak_mapped_bytes", "live_at_peak_bytes", "waste_at_peak", "average_waste",
            "heap_expansion"}
        assert [run["round"] for run in allocator["runs"]] == [1, 2, 3]
        for run in allocator["runs"]:
            assert set(run) == {"round", "figures", "measured"}
            for name in ("events", "allocations", "frees", "reallocs", "bytes_allocated", "peak_live_bytes"):
                assert run["measured"][name] == workload[name]
            assert run["measured"]["peak_resident_bytes"] > 0
        assert allocator["median"]["peak_resident_bytes"] == sorted(
            run["figures"]["peak_resident_bytes"] for run in allocator["runs"])[1]
        assert allocator["samples"] and all(len(sample) == 4 for sample in allocator["samples"])
    libraries = {allocator["name"]: os.path.basename(allocator["library"]) for allocator in output["allocators"]}
    assert libraries["jemalloc"] == "libjemalloc.so.2" and libraries["mimalloc"].startswith("libmimalloc.so.2")
    assert libraries["glibc"].startswith("libc")


def test_database_rows(synthetic: tuple[dict[str, Any], Path, Path]) -> None:
    output, db, _ = synthetic
    connection = sqlite3.connect(db)
    connection.row_factory = sqlite3.Row
    try:
        replays = connection.execute("SELECT * FROM replays").fetchall()
        assert len(replays) == 1
        row = replays[0]
        assert (row["source"], row["synthetic"], row["event_order"], row["repeats"]) == (
            output["source"], 1, "threads", 3)
        for name, value in output["workload"].items():
            if name == "live_digest":  # 16 hexadecimal digits in JSON, two's complement in SQLite
                assert row[name] % (1 << 64) == int(value, 16)
            else:
                assert row[name] == value, name
        stored = connection.execute("SELECT * FROM replay_allocators ORDER BY position").fetchall()
        assert [a["allocator"] for a in stored] == [a["name"] for a in output["allocators"]]
        for position, (a, expected) in enumerate(zip(stored, output["allocators"], strict=True)):
            assert (a["replay_id"], a["position"], a["library"], a["median_round"]) == (
                row["id"], position, expected["library"], expected["median_round"])
            for name, value in expected["median"].items():
                assert a[name] == pytest.approx(value), name
            samples = connection.execute(
                "SELECT events, live_bytes, resident_bytes, mapped_bytes FROM replay_samples "
                "WHERE replay_id = ? AND position = ? ORDER BY sample", (row["id"], position)).fetchall()
            assert [list(sample) for sample in samples] == expected["samples"]
    finally:
        connection.close()


def test_text_output_and_a_second_replay_in_the_same_database(
        synthetic: tuple[dict[str, Any], Path, Path], tmp_path: Path) -> None:
    _, db, _ = synthetic
    copy = tmp_path / "copy.db"
    copy.write_bytes(db.read_bytes())
    completed = mprof("replay", "--synthetic", "--operations", "5000", "--seed", "7", "--repeat", "1",
                      "--allocators", "jemalloc,glibc", "--db", copy)
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0] == ("Replay of synthetic --operations 5000 --seed 7 --max-size 1000: 1 thread, replayed in "
                        "the threads order, medians of 1 replay")
    assert lines[2] == f"Operations  {'5000':>{len(lines[2]) - 12}}"
    assert [line.split()[0] for line in lines[11:13]] == ["jemalloc", "glibc"]
    connection = sqlite3.connect(copy)
    try:
        assert connection.execute("SELECT id, source FROM replays ORDER BY id").fetchall()[1] == (
            2, "synthetic --operations 5000 --seed 7 --max-size 1000")
        assert connection.execute("SELECT allocator FROM replay_allocators WHERE replay_id = 2 "
                                  "ORDER BY position").fetchall() == [("jemalloc",), ("glibc",)]
    finally:
        connection.close()


@pytest.mark.slow
def test_a_profile_database_keeps_its_profile(replayer: None, tmp_path: Path) -> None:
    from samples import rich  # the test suite's hand-made data file

    data, db = tmp_path / "app.mprof", tmp_path / "app.db"
    data.write_bytes(rich().build())
    assert mprof("db", data, "-o", db).returncode == 0
    before = sqlite3.connect(db).execute("SELECT count(*) FROM functions").fetchone()
    page = tmp_path / "app.html"
    completed = mprof("replay", "--synthetic", "--operations", "5000", "--repeat", "1", "--allocators", "glibc",
                      "--db", db, "--html", page)
    assert completed.returncode == 0, completed.stderr
    assert sqlite3.connect(db).execute("SELECT count(*) FROM functions").fetchone() == before
    html = page.read_text()
    assert "Memory profile of" in html and 'id="allocators"' in html and 'href="#allocators"' in html


# ---- The page, in a real browser ----

def open_page(browser: Any, page: Path) -> None:
    browser.get(page.as_uri())
    problems = [entry for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]
    assert problems == []


def table_rows(browser: Any) -> list[list[str]]:
    return browser.execute_script(  # type: ignore[no-any-return]
        "return Array.from(document.querySelectorAll('table.allocators tbody tr'))"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent.trim()))")


@pytest.mark.browser
def test_the_page_of_a_real_replay(browser: Any, synthetic: tuple[dict[str, Any], Path, Path]) -> None:
    output, _, page = synthetic
    open_page(browser, page)
    assert browser.title == "mprof: allocators"
    rows = table_rows(browser)
    assert [row[0] for row in rows] == list(allocators.DEFAULT)
    for row, allocator in zip(rows, output["allocators"], strict=True):
        median = allocator["median"]
        assert row[1] == f"{median['user_ns'] / 1e9:.3f}"
        assert row[5] == f"{median['peak_resident_bytes'] / 1e6:.2f}"
    legend = browser.execute_script(
        "return document.querySelector('#allocators p.legend').textContent.replace(/\\s+/g, ' ').trim()")
    assert legend == "glibc jemalloc tcmalloc mimalloc live bytes"
    lines = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.replay-chart polyline'))"
        ".map(p => p.querySelector('title').textContent.split(':')[0])")
    assert lines == [*allocators.DEFAULT, "live bytes"]


def hand_comparison(name: str, source: str) -> Comparison:
    runs = (replay(), replay(peak_resident_bytes=6000))
    nulls = (null(), null())
    allocator = result(name, runs, nulls)
    other = AllocatorResult("glibc", "/lib/x86_64-linux-gnu/libc.so.6", allocator.runs, allocator.figures,
                            allocator.median, allocator.median_run)
    return Comparison(source, False, "threads", 2, Workload.from_json(WORKLOAD, "test"), nulls, (allocator, other))


@pytest.mark.slow
@pytest.mark.browser
def test_names_are_escaped(browser: Any, tmp_path: Path) -> None:
    db, page = tmp_path / "odd.db", tmp_path / "odd.html"
    database.add(hand_comparison("<b>&amp;</b>", "<script>alert(1)</script>&.trace"), db)
    completed = mprof("html", db, "-o", page)
    assert completed.returncode == 0, completed.stderr
    open_page(browser, page)
    rows = table_rows(browser)
    # 1200 - 400 over 4 allocations; Gloger's waste at the peak, 1 - 2000/5000.
    assert rows[0] == ["<b>&amp;</b>", "0.002", "0.001", "200.0", "0.0", "0.01", "0.00", "60.0", "67.5", "2.50",
                       "0.01"]
    assert rows[1][0] == "glibc"
    heading = browser.execute_script("return document.querySelector('#allocators h3 code').textContent")
    assert heading == "<script>alert(1)</script>&.trace"
    tags = set(browser.execute_script(
        "return Array.from(document.querySelectorAll('#allocators *')).map(e => e.tagName.toLowerCase())"))
    assert tags <= {"section", "h2", "h3", "p", "div", "code", "table", "thead", "tbody", "tr", "th", "td", "span",
                    "svg", "line", "text", "polyline", "title"}
