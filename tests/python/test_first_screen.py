"""What `mprof report` shows by default: each text table's top rows (those
that make up 90% of its total, at least 10 and at most 20), five callers
and callees per call graph entry, a line saying what was left out; --top,
--cutoff and --all; JSON keeps every row; and the pager, only on a
terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from hand_profiles import recorded, report, resolve_by_name

MPROF = Path(__file__).parents[2] / "mprof"
LEFT_OUT = ("rows left out: --all shows every row, --top N the first N, --cutoff PERCENT those above a share of "
            "the total")


def thirty_allocators(sizes: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """main calls f01 to f30 once each; f<k> allocates sizes[k - 1] bytes
    and never frees them."""
    names = {}
    chains = []
    for k, size in enumerate(sizes, start=1):
        call, site = 0x1000 + k * 0x10, 0x10000 + k * 0x100
        names[call], names[site] = "main", f"f{k:02}"
        chains.append(((call, site), size, 1, 0))
    resolve_by_name(monkeypatch, names)
    path = tmp_path / "thirty.mprof"
    path.write_bytes(recorded(chains).build())
    return path


def rows_of(text: str, header: str) -> list[str]:
    """A table's lines after its column header, up to the blank line."""
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(header)) + 1
    end = next((n for n in range(start, len(lines)) if not lines[n]), len(lines))
    return lines[start:end]


def leaked(rows: list[str]) -> list[str]:
    return [row.split()[-1] for row in rows if " main > " in row]


def test_twenty_rows_at_most(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    # f<k> allocates 8k bytes, 3,720 in all: the twenty largest make up
    # 8 x (11 + ... + 30) = 3,280 bytes, 88%, short of 90%.
    path = thirty_allocators([8 * k for k in range(1, 31)], tmp_path, monkeypatch)
    text = report(capsys, "report", path)
    leaks = rows_of(text, "   objects        bytes")
    assert leaked(leaks) == [f"f{k}" for k in range(30, 10, -1)]
    assert leaks[0] == "         1          240   (6)  main > f30"
    assert leaks[-1] == f"  10 of 30 {LEFT_OUT}"
    direct = rows_of(text, "% mem         bytes")
    assert [row.split()[-1] for row in direct[1:-1]] == [f"f{k}" for k in range(30, 10, -1)]
    assert direct[-1] == f"  10 of 30 {LEFT_OUT}"
    # The bins of the twenty largest sizes, in the order of their sizes.
    bins = rows_of(text, "   size     allocs")
    assert [row.split()[0] for row in bins[:-2]] == [str(8 * k) for k in range(11, 31)]
    assert bins[-2].split()[:3] == ["<total>", "30", "3,720"]
    assert bins[-1] == f"  10 of 30 {LEFT_OUT}"
    # main, then f30 to f12; main's five largest callees and a line for the rest.
    graph = text[text.index("index  self+desc"):].splitlines()
    assert [line.split()[-2] for line in graph if line.startswith("[")] == ["main"] + [
        f"f{k}" for k in range(30, 11, -1)]
    main = graph.index(next(line for line in graph if line.startswith("[0]")))
    assert [line.split()[-2] for line in graph[main + 1:main + 6]] == ["f30", "f29", "f28", "f27", "f26"]
    assert graph[main + 6] == f"{'':38}(25 more callees: --all shows them)"
    assert graph[-1] == f"  11 of 31 {LEFT_OUT}"


def test_the_rows_that_make_up_ninety_percent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    # Twelve of 1,000 bytes and eighteen of 1: 12,018 in all, 90% is
    # 10,816.2, which the first eleven rows cover (11,000) and ten do not.
    path = thirty_allocators([1000] * 12 + [1] * 18, tmp_path, monkeypatch)
    leaks = rows_of(report(capsys, "report", "--tables", "leaks", path), "   objects        bytes")
    assert leaked(leaks) == [f"f{k:02}" for k in range(1, 12)]
    assert leaks[-1] == f"  19 of 30 {LEFT_OUT}"


def test_at_least_ten_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    # The first row alone holds 97% of the bytes, yet ten rows are shown.
    path = thirty_allocators([10_000] + [10] * 29, tmp_path, monkeypatch)
    leaks = rows_of(report(capsys, "report", "--tables", "leaks", path), "   objects        bytes")
    assert leaked(leaks) == [f"f{k:02}" for k in range(1, 11)]
    assert leaks[-1] == f"  20 of 30 {LEFT_OUT}"


@pytest.mark.parametrize(("options", "shown"), [
    (["--top", "3"], ["f01", "f02", "f03"]),
    (["--top", "12"], [f"f{k:02}" for k in range(1, 13)]),
    (["--cutoff", "0.05"], [f"f{k:02}" for k in range(1, 31)]),  # 10 bytes are 0.097%: no row limit
    (["--cutoff", "1"], ["f01"]),
    (["--cutoff", "0.05", "--top", "2"], ["f01", "f02"]),
    (["--all"], [f"f{k:02}" for k in range(1, 31)]),
])
def test_options_that_choose_the_rows(options: list[str], shown: list[str], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    path = thirty_allocators([10_000] + [10] * 29, tmp_path, monkeypatch)
    text = report(capsys, "report", "--tables", "leaks,direct,graph", *options, path)
    leaks = rows_of(text, "   objects        bytes")
    assert leaked(leaks) == shown
    assert leaks[len(shown):] == ([f"  {30 - len(shown)} of 30 {LEFT_OUT}"] if len(shown) < 30 else [])
    if options == ["--all"]:
        graph = text[text.index("index  self+desc"):]
        assert "more callees" not in graph and LEFT_OUT not in graph
        callers = [line for line in graph.splitlines() if line.endswith(" main [0]") and not line.startswith("[")]
        assert len(callers) == 30  # each callee's caller line


def test_top_and_all_are_one_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = thirty_allocators([10] * 30, tmp_path, monkeypatch)
    from mprof.cli.main import main
    assert main(["report", "--top", "3", "--all", str(path)]) == 2
    assert main(["report", "--top", "0", str(path)]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_json_keeps_every_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    path = thirty_allocators([8 * k for k in range(1, 31)], tmp_path, monkeypatch)
    data = json.loads(report(capsys, "report", "--format", "json", path))
    assert [leak["kept_bytes"] for leak in data["leaks"]] == [8 * k for k in range(30, 0, -1)]
    assert len(data["direct"]) == 30 and len(data["bins"]) == 30
    [main] = [entry for entry in data["call_graph"] if entry["function"] == "main"]
    assert len(main["callees"]) == 30


# The pager, through the real command on a real terminal (a pseudo-terminal).

def run_on_terminal(arguments: list[str], environment: dict[str, str]) -> tuple[str, str]:
    """mprof's output as a terminal gets it, and its error output (a pipe)."""
    controller, terminal = pty.openpty()
    env = {key: value for key, value in os.environ.items() if key not in ("PAGER", "MPROF_PAGER", "LESS")}
    process = subprocess.Popen([MPROF, *arguments], stdin=subprocess.DEVNULL, stdout=terminal,
                               stderr=subprocess.PIPE, env={**env, **environment})
    os.close(terminal)
    output = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the terminal's other side closed
            break
        if not chunk:
            break
        output += chunk
    os.close(controller)
    assert process.stderr is not None
    errors = process.stderr.read().decode()
    assert process.wait(timeout=60) == 0
    return output.decode().replace("\r\n", "\n"), errors


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    """A real data file: the reports below run in another process."""
    path = tmp_path / "w.mprof"
    widgets = Path(__file__).parents[2] / "build" / "widgets"
    subprocess.run([MPROF, "run", "--quiet", "-o", path, widgets, "100"], check=True, capture_output=True)
    return path


@pytest.mark.slow
def test_the_pager_on_a_terminal(data_file: Path, tmp_path: Path) -> None:
    paged = tmp_path / "paged.txt"
    pager = f"{sys.executable} -c 'import os, sys; open(sys.argv[1], \"w\").write(os.environ[\"LESS\"] + \"|\" " \
            f"+ sys.stdin.read())' {paged}"
    plain = subprocess.run([MPROF, "report", "--tables", "leaks", data_file], capture_output=True, text=True,
                           check=True).stdout
    # $MPROF_PAGER before $PAGER; LESS=FRX unless set.
    assert run_on_terminal(["report", "--tables", "leaks", str(data_file)],
                           {"MPROF_PAGER": pager, "PAGER": "false"}) == ("", "")
    assert paged.read_text() == "FRX|" + plain
    paged.unlink()
    assert run_on_terminal(["report", "--tables", "leaks", str(data_file)], {"PAGER": pager, "LESS": "S"}) == ("", "")
    assert paged.read_text() == "S|" + plain
    paged.unlink()
    # --no-pager, an empty pager or cat: straight to the terminal.
    for arguments, environment in ((["--no-pager"], {"PAGER": pager}), ([], {"MPROF_PAGER": "", "PAGER": pager}),
                                   ([], {"PAGER": "cat"})):
        assert run_on_terminal(["report", *arguments, "--tables", "leaks", str(data_file)], environment) == (plain, "")
        assert not paged.exists()
    # Piped: never paged.
    piped = subprocess.run([MPROF, "report", "--tables", "leaks", data_file], capture_output=True, text=True,
                           env={**os.environ, "MPROF_PAGER": pager}, check=True)
    assert piped.stdout == plain and not paged.exists()


@pytest.mark.slow
def test_a_pager_that_cannot_be_run(data_file: Path) -> None:
    plain = subprocess.run([MPROF, "report", "--tables", "leaks", data_file], capture_output=True, text=True,
                           check=True).stdout
    output, errors = run_on_terminal(["report", "--tables", "leaks", str(data_file)], {"PAGER": "no-such-pager-here"})
    assert output == plain and "no-such-pager-here: not found" in errors
