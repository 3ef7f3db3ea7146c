"""Blocks at and around every size-class and bin boundary (tests/targets/
boundaries.c), through the real monitor and `mprof report`: every figure of
the summary, leak, bin, direct and call graph tables follows from the
program's own table of sizes and counts, worked out here.  The blocks it
keeps stay in a global array: still reachable, as memcheck says, and
listed in the leak table only with every kind (--leak-kinds all)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from e2e_support import MPROF, Targets, numbers, table

# size -> blocks allocated by boundaries.c; it frees all but the last of each.
BLOCKS = {0: 1, 1: 2, 16: 3, 32: 4, 33: 5, 256: 6, 257: 7, 1024: 8, 1025: 9, 2048: 10, 2049: 11, 100000: 12}
BELOW_1025 = [size for size in BLOCKS if size <= 1024]
ABOVE_1024 = [size for size in BLOCKS if size > 1024]


def size_class(size: int) -> str:
    """mprof(5): s 0-32, m 33-256, l 257-2048, x above."""
    return "s" if size <= 32 else "m" if size <= 256 else "l" if size <= 2048 else "x"


def by_class(sizes: list[int], kept_only: bool = False) -> dict[str, int]:
    totals = dict.fromkeys("smlx", 0)
    for size in sizes:
        totals[size_class(size)] += size * (1 if kept_only else BLOCKS[size])
    return totals


ALL_BYTES = sum(size * blocks for size, blocks in BLOCKS.items())
KEPT_BYTES = sum(BLOCKS)  # one block of each size
ALLOCS = sum(BLOCKS.values())


@pytest.fixture(scope="module")
def run(targets: Targets, tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("boundaries") / "boundaries.mprof"
    completed = subprocess.run([MPROF, "run", "--quiet", "-o", output, targets.build("boundaries")],
                               capture_output=True, text=True, timeout=60)
    assert (completed.returncode, completed.stdout, completed.stderr) == (0, "", "")
    return output


@pytest.fixture(scope="module")
def text(run: Path) -> str:
    completed = subprocess.run([MPROF, "report", run], capture_output=True, text=True, check=True)
    return completed.stdout


@pytest.fixture(scope="module")
def report(run: Path) -> dict:  # type: ignore[type-arg]
    completed = subprocess.run([MPROF, "report", "--format", "json", run], capture_output=True, text=True, check=True)
    return json.loads(completed.stdout)  # type: ignore[no-any-return]


def test_worked_figures() -> None:
    # The arithmetic below, done once by hand, so that a slip in the helpers
    # above cannot hide one in the code.
    assert (ALLOCS, ALL_BYTES, KEPT_BYTES) == (78, 1_264_114, 106_741)
    assert by_class(list(BLOCKS)) == {"s": 178, "m": 1_701, "l": 39_696, "x": 1_222_539}


def test_bins_in_json(report: dict) -> None:  # type: ignore[type-arg]
    expected = [(size, str(size), BLOCKS[size], BLOCKS[size] - 1, size * BLOCKS[size], size) for size in BELOW_1025]
    above = [(1025, "> 1024", sum(BLOCKS[s] for s in ABOVE_1024), sum(BLOCKS[s] - 1 for s in ABOVE_1024),
              sum(s * BLOCKS[s] for s in ABOVE_1024), sum(ABOVE_1024))]
    assert [(b["size"], b["label"], b["allocs"], b["frees"], b["bytes"], b["kept_bytes"])
            for b in report["bins"]] == expected + above


def test_bin_table_rows_in_size_order(text: str) -> None:
    rows = table(text, "Allocation bin table")
    assert [row.split()[0] for row in rows] == ["0", "1", "16", "32", "33", "256", "257", "1024", ">", "<total>"]
    for row, size in zip(rows, BELOW_1025, strict=False):
        # size, allocs, bytes, frees, kept (a share in parentheses only from 1%)
        shown = [n for n in numbers(row)]
        share = size * BLOCKS[size] * 100 // ALL_BYTES
        kept_share = size * 100 // KEPT_BYTES
        assert shown == [size, BLOCKS[size], size * BLOCKS[size], *([share] if share else []), BLOCKS[size] - 1,
                         size, *([kept_share] if kept_share else [])], row
    assert numbers(rows[8]) == [1024, 42, 1_252_244, 99, 38, 105_122, 98]
    assert numbers(rows[9]) == [ALLOCS, ALL_BYTES, ALLOCS - 12, KEPT_BYTES]


def test_direct_table_splits_by_class(report: dict, text: str) -> None:  # type: ignore[type-arg]
    [site] = report["direct"]
    assert site["function"] == "allocate_each"
    assert (site["calls"], site["bytes"], site["kept_bytes"], site["kept_objects"]) == (
        ALLOCS, ALL_BYTES, KEPT_BYTES, 12)
    assert site["bytes_by_class"] == by_class(list(BLOCKS))
    assert site["kept_by_class"] == by_class(list(BLOCKS), kept_only=True) == {
        "s": 49, "m": 289, "l": 4_354, "x": 102_049}
    # The text shows whole percentages, rounded down, blank under 1%:
    # l 39,696 / 1,264,114 = 3.1%, x 96.7%; kept l 4,354 / 106,741 = 4.1%, x 95.6%.
    total, row = table(text, "Direct allocation table")
    assert row.split() == ["100", "1,264,114", "3", "96", "106,741", "4", "95", "78", "allocate_each"]
    assert total.split() == ["1,264,114", "3", "96", "106,741", "4", "95", "78", "<total>"]


def test_call_graph_splits_by_class(report: dict) -> None:  # type: ignore[type-arg]
    entries = {entry["function"]: entry for entry in report["call_graph"]}
    main = entries["main"]
    callees = {c["function"]: (c["calls"], c["bytes"], c["bytes_by_class"]) for c in main["callees"]}
    assert callees == {
        "below_1025": (36, 11_870, by_class(BELOW_1025)),
        "above_1024": (42, 1_252_244, by_class(ABOVE_1024)),
    }
    assert by_class(BELOW_1025) == {"s": 178, "m": 1_701, "l": 9_991, "x": 0}
    allocate = entries["allocate_each"]
    assert (allocate["self_bytes"], allocate["self_by_class"], allocate["called"]) == (
        ALL_BYTES, by_class(list(BLOCKS)), ALLOCS)
    callers = {c["function"]: (c["calls"], c["bytes"], c["bytes_by_class"]) for c in allocate["callers"]}
    assert callers == {
        "below_1025": (36, 11_870, by_class(BELOW_1025)),
        "above_1024": (42, 1_252_244, by_class(ABOVE_1024)),
    }


def test_leak_table_largest_first(run: Path, text: str) -> None:
    # Each size's kept block stays in a global array: none is lost, all twelve
    # are still reachable, as memcheck says (106,741 bytes in 12 blocks).  By
    # default the table lists what is lost and counts the others.
    assert [row.strip() for row in table(text, "Memory leak table")] == [
        "(nothing lost)",
        f"Still reachable, not listed: 12 blocks, {KEPT_BYTES:,} bytes; --leak-kinds=reachable lists them"]
    # Every kind listed: 105,122 of 106,741 kept bytes is 98.5%; 1,619 is 1.5%.
    completed = subprocess.run([MPROF, "report", "--tables", "leaks", "--leak-kinds", "all", run],
                               capture_output=True, text=True, check=True)
    assert [row.split() for row in table(completed.stdout, "Memory leak table")] == [
        ["4", "105,122", "(98)", "still", "reachable", "main", ">", "above_1024", ">", "allocate_each"],
        ["8", "1,619", "(1)", "still", "reachable", "main", ">", "below_1025", ">", "allocate_each"],
    ]


def test_text_summary_line_by_line(text: str) -> None:
    # After the glance at the tables' first rows, which opens the report.
    assert text.startswith("At a glance: ")
    summary = text[text.index("\n\nProgram summary\n") + 2:]
    lines = summary[:summary.index("\n\n")].splitlines()
    assert lines[0] == "Program summary"
    assert re.fullmatch(r"  process \d+: /\S+/boundaries", lines[1]), lines[1]
    # Last, memcheck's LEAK SUMMARY, with its figures for the program: every
    # kept block still reachable (see test_leak_table_largest_first).
    assert lines[10:] == [
        "  LEAK SUMMARY:",
        "    definitely lost: 0 bytes in 0 blocks",
        "    indirectly lost: 0 bytes in 0 blocks",
        "      possibly lost: 0 bytes in 0 blocks",
        f"    still reachable: {KEPT_BYTES:,} bytes in 12 blocks"]
    labels = [line[:16].strip() for line in lines[2:10]]
    assert labels == ["allocations", "frees", "kept at exit", "most live", "temporaries", "run time", "calls",
                      "unusual"]
    values = {label: line[16:] for label, line in zip(labels, lines[2:10], strict=True)}
    assert values["allocations"] == "78 blocks, 1,264,114 bytes, 16,206.6 bytes on average"
    assert values["frees"] == "66 blocks, 1,157,373 bytes"
    assert values["kept at exit"] == "12 blocks, 106,741 bytes"
    # At most one block is live beside the kept ones: the live bytes first
    # reach their most with the first of the twelve blocks of 100,000 bytes
    # (eleven sizes kept, and it), the 67th allocation, and only equal them
    # later.
    assert re.fullmatch(r"12 blocks, 106,741 bytes; the bytes at \d+\.\d{3} s, allocation 67", values["most live"])
    # Every block but the kept one of each size is freed before the next
    # allocation: all 66 frees are temporaries.
    assert values["temporaries"] == ("66 blocks freed before their thread allocated again, 84.6% of all "
                                     "allocations")
    seconds, rate, per_second = re.fullmatch(r"(\d+\.\d{3}) s, ([\d,]+) bytes/s, ([\d,]+) allocations/s",
                                             values["run time"]).groups()
    rate_value, per_second_value = int(rate.replace(",", "")), int(per_second.replace(",", ""))
    # Both rates are over the same time: their ratio is the average size.
    assert rate_value / per_second_value == pytest.approx(ALL_BYTES / ALLOCS, rel=1e-4)
    assert values["calls"] == "malloc 78, free 66"
    assert re.fullmatch(r"early [1-9][\d,]*|none", values["unusual"]), values["unusual"]


@pytest.mark.parametrize(("cutoff", "paths"), [("1", ["above_1024", "below_1025"]), ("1.6", ["above_1024"]),
                                                ("98.6", [])])
def test_cutoff_on_the_leak_table(run: Path, cutoff: str, paths: list[str]) -> None:
    # The two paths keep 98.5% and 1.5% of the kept bytes, all of them still
    # reachable (test_leak_table_largest_first): listed with every kind.
    completed = subprocess.run([MPROF, "report", "--tables", "leaks", "--leak-kinds", "all", "--cutoff", cutoff, run],
                               capture_output=True, text=True, check=True)
    rows = table(completed.stdout, "Memory leak table")
    left_out = 2 - len(paths)
    assert [row.split()[7] for row in rows[:len(paths)]] == paths
    assert rows[len(paths):] == ([f"  {left_out} of 2 rows left out: --all shows every row, --top N the first N, "
                                  "--cutoff PERCENT those above a share of the total"] if left_out else [])
