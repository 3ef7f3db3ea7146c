"""The peak table and the temporaries table, from a data file written by
hand with known figures: what each whole path held at the peak, which made
temporary allocations; in text, JSON and on the page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datafile_builder import SUMMARY_FIELDS, DataFileBuilder
from hand_profiles import page_rows, report, resolve_by_name
from mprof.cli.inputs import load_profile
from mprof.report import flame, html
from mprof.report.display import for_display

# A return address in each function, named caller_callee.
MAIN_HOLD, HOLD_MALLOC, MAIN_OUTER, OUTER_MIDDLE, MIDDLE_INNER, INNER_MALLOC, MAIN_CHURN, CHURN_MALLOC = (
    0x100, 0x200, 0x110, 0x300, 0x400, 0x500, 0x120, 0x600)
NAMES = {MAIN_HOLD: "main", MAIN_OUTER: "main", MAIN_CHURN: "main", HOLD_MALLOC: "hold", OUTER_MIDDLE: "leak_outer",
         MIDDLE_INNER: "leak_middle", INNER_MALLOC: "leak_inner", CHURN_MALLOC: "churn"}
MIB = 1 << 20


def peak_builder(pid: int = 4242) -> DataFileBuilder:
    """hold keeps 100 blocks of 1 MiB live at the peak and frees them, one a
    temporary; leak_inner keeps 1,000 of 1,000 bytes; churn makes a million
    temporaries of 64 bytes, none live at the peak."""
    summary = [0] * SUMMARY_FIELDS
    summary[0:6] = [1_001_100, 1_000_100, 100 * MIB + 1_000_000 + 64_000_000, 100 * MIB + 64_000_000, 1_100,
                    100 * MIB + 1_000_000]
    summary[22:25] = [1_000_001, 3_850_000, 1_100]  # temporaries; the peak at 3.85 ms, the 1,100th allocation
    # Two points of the memory over time: 1 MB live, then the held blocks
    # too; the peak (at 3.85 ms) after them.
    timeline = [(1_000_000, 1_000_000, 1000, 8_000_000), (2_000_000, 100 * MIB + 1_000_000, 1100, 9_000_000)]
    return DataFileBuilder(pid=pid, exe=b"/bin/prog", leak_depth=5, summary=summary, timeline=timeline, paths=[
        ((HOLD_MALLOC, MAIN_HOLD), 100, 100, (0, 0, 0, 100 * MIB), (0, 0, 0, 100 * MIB), 1, 100, 100 * MIB),
        ((INNER_MALLOC, MIDDLE_INNER, OUTER_MIDDLE, MAIN_OUTER), 1000, 0, (0, 0, 1_000_000, 0), (0,) * 4, 0, 1000,
         1_000_000),
        ((CHURN_MALLOC, MAIN_CHURN), 1_000_000, 1_000_000, (0, 64_000_000, 0, 0), (0, 64_000_000, 0, 0),
         1_000_000, 0, 0),
    ])


@pytest.fixture
def peak_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    resolve_by_name(monkeypatch, NAMES)
    path = tmp_path / "peak.mprof"
    path.write_bytes(peak_builder().build())
    return path


def test_the_peak_table(peak_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = report(capsys, "report", "--tables", "peak", peak_file).splitlines()
    assert text[text.index("") + 1:] == [
        "The peak: 105,857,600 bytes live at 0.003850 s, after 1,100 of 1,001,100 allocations.",
        "",
        "    blocks         bytes   (%)  path",
        "       100   104,857,600  (99)  main > hold",
        "     1,000     1,000,000        main > leak_outer > leak_middle > leak_inner"]


def test_the_temporaries_table(peak_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = report(capsys, "report", "--tables", "temporaries", peak_file).splitlines()
    assert text[text.index("") + 1:] == [
        "       count   (%)  path",
        "   1,000,000  (99)  main > churn",
        "           1        main > hold"]


def test_the_summary_says_when_and_how_many(peak_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = report(capsys, "report", "--tables", "summary", peak_file).splitlines()
    assert "  most live     1,100 blocks, 105,857,600 bytes; the bytes at 0.004 s, allocation 1,100" in lines
    assert ("  temporaries   1,000,001 blocks freed before their thread allocated again, 99.9% of all allocations"
            in lines)


def test_json_holds_them(peak_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(report(capsys, "report", "--format", "json", peak_file))
    peak = data["peak"]
    assert (peak["elapsed_seconds"], peak["allocation"], peak["bytes"]) == (0.00385, 1_100, 105_857_600)
    assert [(p["path"], p["blocks"], p["bytes"]) for p in peak["paths"]] == [
        ("main > hold", 100, 100 * MIB), ("main > leak_outer > leak_middle > leak_inner", 1000, 1_000_000)]
    assert [(p["path"], p["temporaries"]) for p in data["temporaries"]] == [("main > churn", 1_000_000),
                                                                         ("main > hold", 1)]


def test_the_flame_graphs_of_the_peak_and_of_temporaries(peak_file: Path) -> None:
    model = for_display(load_profile([peak_file]))
    peak = flame.peak_flame(model)
    assert peak is not None
    assert [(f.name, f.bytes, f.depth) for f in peak.frames] == [
        ("all", 105_857_600, 0), ("main", 105_857_600, 1), ("hold", 100 * MIB, 2), ("leak_outer", 1_000_000, 2),
        ("leak_middle", 1_000_000, 3), ("leak_inner", 1_000_000, 4)]
    temporaries = flame.temporary_flame(model)
    assert [(f.name, f.bytes) for f in temporaries.frames] == [("all", 1_000_001), ("main", 1_000_001),
                                                               ("churn", 1_000_000)]  # hold's 1 is too narrow
    page = html.render(model)
    assert 'id="peak-graph"' in page and 'data-unit="temporary allocations"' in page
    assert "The peak: 105,857,600 bytes live at 0.003850 s, after 1,100 of 1,001,100 allocations." in page


def test_several_processes_have_no_one_peak(peak_file: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.mprof"
    other.write_bytes(peak_builder(pid=4243).build())
    text = report(capsys, "report", "--tables", "peak", peak_file, other)
    assert "Peak table: the peak is one process's; report one with --pid or --program" in text
    assert json.loads(report(capsys, "report", "--format", "json", peak_file, other))["peak"] is None


def test_the_page_draws_memory_over_time_and_the_peak_table(peak_file: Path) -> None:
    page = html.render(for_display(load_profile([peak_file])))
    # 1,000 units across for the run's 2.5 s, 200 up for the most bytes
    # (the peak, 105,857,600, above the resident sets): the points at 1 and
    # 2 ms, then the peak at 3.85 ms, x = ns * 1000 / 2.5e9, y = 200 - bytes
    # * 200 / 105,857,600.
    assert '<polyline class="live" points="0.4,198.11 0.8,0.0 1.54,0.0">' in page
    assert '<polyline class="resident" points="0.4,184.89 0.8,183.0">' in page
    assert '<circle class="peak" cx="1.54" cy="0.0" r="5">' in page
    assert page_rows(page, "peak") == [["100", "104,857,600", "(99)", "main > hold"],
                                       ["1,000", "1,000,000", "", "main > leak_outer > leak_middle > leak_inner"]]
