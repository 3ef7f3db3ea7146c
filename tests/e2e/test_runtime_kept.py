"""Blocks the C and C++ runtimes keep on purpose until exit are shown apart
from the program's leaks, in every report.  What the runtimes keep is
measured by valgrind: its "in use at exit" without the runtimes' clean-up
at exit (--run-libc-freeres=no, --run-cxx-freeres=no) less what the test
program leaks itself, and with it.

valgrind's "in use at exit" is every block never freed: the runs compared
with it are not classified (mprof run --no-leak-check), and their leak
table is the paper's, of every block never freed, as in a file of an older
monitor.  One run classified checks that the runtimes' blocks stay apart
where memcheck says they are still reachable."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from e2e_support import Targets, mprof, table
from leak_kinds_support import own_functions, under_memcheck

IN_USE = re.compile(r"in use at exit: ([\d,]+) bytes in ([\d,]+) blocks")


def in_use_at_exit(command: list[str | Path], *options: str) -> tuple[int, int]:
    """valgrind's bytes and blocks still allocated at exit."""
    completed = subprocess.run(["valgrind", *options, *map(str, command)], capture_output=True, text=True,
                               timeout=300, check=True)
    bytes_, blocks = IN_USE.search(completed.stderr).groups()  # type: ignore[union-attr]
    return int(bytes_.replace(",", "")), int(blocks.replace(",", ""))


def note_of(rows: list[str]) -> tuple[int, int, dict[str, int]]:
    """The blocks, bytes and kinds of the line under the leak table that
    says what the runtimes keep."""
    match = re.fullmatch(r"  Kept on purpose by the C and C\+\+ runtimes until exit, not listed: ([\d,]+) blocks, "
                         r"([\d,]+) bytes \((.*)\); --include-runtime lists them", rows[-1])
    assert match, rows[-1]
    kinds = {kind: int(value.replace(",", "")) for kind, value in (
        part.rsplit(" ", 1) for part in match[3].split(", "))}
    return int(match[1].replace(",", "")), int(match[2].replace(",", "")), kinds


@pytest.fixture(scope="module")
def c_run(tmp_path_factory: pytest.TempPathFactory, targets: Targets) -> tuple[Path, list[str | Path]]:
    command: list[str | Path] = [targets.build("runtime_kept", "-ldl"),
                                 targets.build("plugin.so", source="plugin.c", shared=True)]
    output = tmp_path_factory.mktemp("runtime") / "c.mprof"
    # stdout is a pipe: a buffer of one pipe block.  Not classified: every
    # block never freed, as valgrind's "in use at exit" counts them.
    mprof("run", "--quiet", "--no-leak-check", "-o", output, "--", *command)
    return output, command


@pytest.mark.valgrind
def test_stdio_and_locale_as_valgrind_counts_them(targets: Targets, tmp_path: Path) -> None:
    # Without the thread and the library, whose loader blocks grow with
    # the monitor's own libraries, the runtime keeps the same under both.
    # Not classified, as valgrind's "in use at exit" counts every block.
    command: list[str | Path] = [targets.build("runtime_kept", "-ldl")]
    output = tmp_path / "plain.mprof"
    mprof("run", "--quiet", "--no-leak-check", "-o", output, "--", *command)
    text = mprof("report", "--tables", "summary,leaks", output).stdout
    rows = table(text, "Memory leak table")
    assert rows[0] == "         1        1,000 (100)  main > leak_here"
    # What valgrind finds in use at exit without the runtimes' clean-up, but
    # the program's one block of 1,000 bytes.
    runtime_bytes, runtime_blocks = (figure - mine for figure, mine in zip(
        in_use_at_exit(command, "--run-libc-freeres=no"), (1000, 1), strict=True))
    blocks, bytes_, kinds = note_of(rows)
    assert len(rows) == 2 and (blocks, bytes_) == (runtime_blocks, runtime_bytes)
    assert kinds == {"locale tables": runtime_bytes - 4096, "stdio buffer": 4096}  # one block of a pipe
    [kept] = [line for line in text.splitlines() if line.startswith("  kept at exit")]
    assert kept.split(None, 3)[3] == (f"{runtime_blocks + 1:,} blocks, {runtime_bytes + 1000:,} bytes; of these the "
                                       f"runtime's own: {runtime_blocks:,} blocks, {runtime_bytes:,} bytes")
    # With the runtimes' clean-up, valgrind finds only the program's block.
    assert in_use_at_exit(command) == (1000, 1)


def test_the_loaders_blocks(c_run: tuple[Path, list[str | Path]]) -> None:
    output, _ = c_run
    rows = table(mprof("report", "--tables", "leaks", output).stdout, "Memory leak table")
    assert rows[0] == "         1        1,000 (100)  main > leak_here"
    blocks, bytes_, kinds = note_of(rows)
    assert len(rows) == 2 and sorted(kinds) == ["dynamic loader", "locale tables", "stdio buffer"]
    assert sum(kinds.values()) == bytes_ and kinds["stdio buffer"] == 4096


@pytest.mark.slow
def test_include_runtime_lists_them_marked(c_run: tuple[Path, list[str | Path]]) -> None:
    output, _ = c_run
    data = json.loads(mprof("report", "--format", "json", output).stdout)
    summary = data["summary"]
    # JSON's leaks are the text's; the runtime's are under a key of their own.
    runtime = data["runtime_kept"]
    assert all(leak["runtime"] for leak in runtime)
    assert sum(leak["kept_bytes"] for leak in runtime) == summary["runtime_kept_bytes"]
    assert sum(leak["kept_objects"] for leak in runtime) == summary["runtime_kept_objects"]
    assert [(leak["path"], leak["kept_bytes"], leak["runtime"]) for leak in data["leaks"]] == [
        ("main > leak_here", 1000, "")]
    text = mprof("report", "--all", "--tables", "leaks", "--include-runtime", output).stdout
    rows = table(text, "Memory leak table")
    assert len(rows) == len(data["leaks"]) + len(runtime)
    marked = [row for row in rows if "  [runtime: " in row]
    assert len(marked) == len(runtime)
    assert sum(int(row.split()[1].replace(",", "")) for row in marked) == summary["runtime_kept_bytes"]
    assert sum(row.endswith(")  main > leak_here") for row in rows) == 1
    # The shares are of all bytes kept, now.
    assert all(row.split()[2] != "(100)" for row in rows)


@pytest.mark.slow
def test_the_page_leaves_them_out_too(c_run: tuple[Path, list[str | Path]], tmp_path: Path) -> None:
    output, _ = c_run
    page = tmp_path / "c.html"
    mprof("html", output, "-o", page)
    rows = json.loads(re.search(r'<script type="application/json" id="rows-leaks">(.*?)</script>',
                                page.read_text(), re.S)[1])  # type: ignore[index]
    assert [row["c"][:3] for row in rows] == [["1", "1,000", "(100)"]]
    assert "Kept on purpose by the C and C++ runtimes until exit, not listed: " in page.read_text()
    mprof("html", "--include-runtime", output, "-o", page)
    rows = json.loads(re.search(r'<script type="application/json" id="rows-leaks">(.*?)</script>',
                                page.read_text(), re.S)[1])  # type: ignore[index]
    assert len(rows) > 1 and "not listed" not in page.read_text()


@pytest.mark.valgrind
def test_classified_the_runtimes_blocks_are_still_reachable_apart(targets: Targets, tmp_path: Path) -> None:
    # The same program classified: memcheck finds nothing lost, and still
    # reachable the program's block (leak_here's, held by a global) and the
    # runtimes' (stdio and locale, under main); the leak table lists
    # nothing, counts the program's block on a line, and the runtimes'
    # blocks apart on theirs.
    program = targets.build("runtime_kept", "-ldl")
    memcheck = under_memcheck([program], own_functions(program))
    assert {kind: figures for kind, figures in memcheck.totals.items() if figures != (0, 0)} == {
        "reachable": memcheck.totals["reachable"]}
    program_blocks, program_bytes = memcheck.by_function[("reachable", "leak_here")]
    assert (program_blocks, program_bytes) == (1, 1000)
    output = tmp_path / "classified.mprof"
    mprof("run", "--quiet", "-o", output, "--", program)
    rows = table(mprof("report", "--tables", "leaks", output).stdout, "Memory leak table")
    assert rows[0].strip() == "(nothing lost)" and len(rows) == 3
    assert re.fullmatch(r"  Still reachable, not listed: 1 block, 1,000 bytes; --leak-kinds=reachable lists them",
                        rows[1]), rows[1]
    blocks, bytes_, kinds = note_of(rows)
    assert (blocks + program_blocks, bytes_ + program_bytes) == memcheck.totals["reachable"]
    assert sorted(kinds) == ["locale tables", "stdio buffer"]


@pytest.mark.valgrind
def test_the_cxx_exception_pool(targets: Targets, tmp_path: Path) -> None:
    command = [targets.build("exceptions")]
    output = tmp_path / "cxx.mprof"
    mprof("run", "--quiet", "-o", output, "--", *command)
    data = json.loads(mprof("report", "--format", "json", output).stdout)
    [pool] = [leak for leak in data["runtime_kept"] if leak["runtime"] == "C++ exception pool"]
    # The pool is what libstdc++'s clean-up at exit frees.
    without, with_cleanup = in_use_at_exit(command, "--run-cxx-freeres=no"), in_use_at_exit(command)
    assert (pool["kept_objects"], pool["kept_bytes"]) == (without[1] - with_cleanup[1], without[0] - with_cleanup[0])
    assert "C++ exception pool" not in mprof("report", "--all", "--tables", "leaks", output).stdout.split(
        "Kept on purpose")[0]
