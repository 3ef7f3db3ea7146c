"""The first screen of mprof report (issue 50): on tests/targets/first_screen.cc built at -O2 -g, whose allocations
its source gives, the folded rows keep the frames the developer wrote, names read short, and the first screen of a
terminal, 120x40 and 80x24, shows the top rows of the peak, the leaks and the temporaries."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from e2e_support import MPROF, Shared, Targets, mprof

# first_screen.cc's figures: 50 sessions of 520 bytes (one of them kept by the global current), 50 vectors of 64
# doubles kept in the cache, 200 copies of one in score(), each freed before the next allocation, 200 names kept.
SESSIONS = "main > make_session"
CACHE = re.compile(r"^main > Cache::lookup > std::vector<>::vector > \[\d+ std::\] > std::__new_allocator<>::allocate$")
TEMPORARY = re.compile(r"^main > score > std::vector<>::vector > \[\d+ std::\] > std::__new_allocator<>::allocate$")
REGISTRY = re.compile(r"^main > remember > std::operator\+<> > \[\d+ std::\] > std::__cxx11::basic_string<>::_M_\w+$")


@pytest.fixture
def profiled(shared: Shared, targets: Targets) -> Path:
    """first_screen's data file, made once for the test run."""
    program = targets.build("first_screen", "-O2")

    def run(output: Path) -> None:
        assert mprof("run", "--quiet", "-o", output, program).stdout == "12800\n"

    return shared.made("first_screen-O2.mprof", run)


def table_rows(report: str, heading: str) -> dict[str, tuple[int, ...]]:
    """The rows of the table whose column heading line is heading: path -> its figures."""
    lines = report.splitlines()
    start = lines.index(heading) + 1
    rows: dict[str, tuple[int, ...]] = {}
    for line in lines[start:]:
        match = re.match(r"^\s+((?:[\d,]+\s+)+)(?:\(\s*\d+\)\s+)?(?:definitely lost\s+)?(\S.*)$", line)
        if not line.strip() or not match:
            break
        rows[match[2]] = tuple(int(figure.replace(",", "")) for figure in match[1].split())
    return rows


def test_rows_keep_the_frames_the_developer_wrote_in_short_names(profiled: Path) -> None:
    report = mprof("report", "--no-pager", profiled).stdout
    peak = table_rows(report, f"{'blocks':>10} {'bytes':>13} {'(%)':>5}  path")
    assert peak[SESSIONS] == (50, 26_000)
    assert [figures for path, figures in peak.items() if CACHE.match(path)] == [(50, 25_600)]
    # The registry's 200 names, "a registered name of some length, number " and the number: 10 of 43 bytes with
    # their NUL, 90 of 44, 100 of 45.
    assert [figures for path, figures in peak.items() if REGISTRY.match(path)] == [(200, 10 * 43 + 90 * 44 + 100 * 45)]
    temporaries = table_rows(report, f"{'count':>12} {'(%)':>5}  path")
    assert [figures for path, figures in temporaries.items() if TEMPORARY.match(path)] == [(200,)]
    leaks = table_rows(report, f"{'objects':>10} {'bytes':>12} {'(%)':>5}  {'kind':<15}  path")
    assert leaks == {SESSIONS: (49, 49 * 520)}
    # No row of the three tables names a function with its parameters or template arguments.
    assert not [path for table in (peak, temporaries, leaks) for path in table if "(" in path or "<char" in path]


def first_screen(directory: Path, report: Path, columns: int, lines: int) -> list[str]:
    """The first lines mprof report --no-pager writes in a tmux pane of that size, as the terminal shows them
    (long lines wrapped)."""
    socket = directory / f"tmux-{columns}x{lines}.socket"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k not in ("LD_PRELOAD", "TMUX",
                                                                                            "COLUMNS", "LINES")}
    env["TERM"] = "xterm"

    def tmux(*arguments: str) -> str:
        return subprocess.run(["tmux", "-S", str(socket), "-f", "/dev/null", *arguments], env=env, check=True,
                              capture_output=True, text=True, timeout=60).stdout

    done = directory / f"done-{columns}x{lines}"
    tmux("new-session", "-d", "-x", str(columns), "-y", str(lines),
         f"{MPROF} report --no-pager {report}; touch {done}; sleep 600")
    try:
        for _ in range(600):
            if done.exists():
                break
            subprocess.run(["sleep", "0.1"], check=True)
        assert done.exists(), "mprof report did not end"
        # The whole history, from its first line: the screen the report began on.
        return tmux("capture-pane", "-p", "-S", "-").splitlines()[:lines]
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], env=env, capture_output=True)


@pytest.mark.parametrize(("columns", "lines", "shown"), [(120, 40, ("peak", "lost", "temporaries")),
                                                          (80, 24, ("peak", "lost"))])
def test_the_first_screen_names_the_top_rows(profiled: Path, tmp_path: Path, columns: int, lines: int,
                                            shown: tuple[str, ...]) -> None:
    screen = first_screen(tmp_path, profiled, columns, lines)
    assert all(len(line) <= columns for line in screen)
    text = "\n".join(screen)
    if "peak" in shown:
        assert re.search(r"^  peak +72,704 B +\(\d+\)  \.\.\. > ", text, re.MULTILINE), text
    if "lost" in shown:
        assert re.search(rf"^  lost +25,480 B +\(\d+\)  {SESSIONS}$", text, re.MULTILINE), text
    if "temporaries" in shown:
        assert re.search(r"^  temporaries +200 +\(100\)  main > score > std::vector<>::vector > ", text,
                         re.MULTILINE), text
