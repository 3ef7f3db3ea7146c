"""A profile of a shell pipeline, as `mprof run -- bash -c 'A | B | C'`
writes it: the shell, its three fork children and the three programs they
become, each with its own data file.  The report opens with a process
table whose figures are each file's own (as `mprof dump` reads them), and
--program or --pid reports some processes alone, with the figures of a
report of their files alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e_support import mprof
from mprof.reducer import datafile


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    directory = tmp_path_factory.mktemp("pipeline")
    completed = mprof("run", "--quiet", "-o", directory / "p.mprof", "--", "bash", "-c",
                      "seq 3000 | sort -rn | wc -l")
    assert completed.stdout == "3000\n"
    return sorted(directory.iterdir())


def program_of(path: Path) -> str:
    return Path(datafile.read(path).program.exe).name


@pytest.mark.slow
def test_one_row_per_process_image(pipeline: list[Path]) -> None:
    files = {path: datafile.read(path) for path in pipeline}
    assert sorted(program_of(path) for path in pipeline) == ["bash"] * 4 + ["seq", "sort", "wc"]
    text = mprof("report", "--tables", "summary", *pipeline).stdout
    lines = text.splitlines()
    assert lines[0] == "Processes: 7, added up in the tables below; --pid PID or --program NAME reports some alone"
    rows = {}
    for line in lines[3:10]:
        pid, ppid, origin, allocations, allocated, peak, kept, command = line.split(None, 7)
        rows[(int(pid), origin)] = (int(ppid), *(int(figure.replace(",", "")) for figure in (
            allocations, allocated, peak, kept)), command)
    assert lines[10:12] == ["", "Program summary (the processes above, added up)"]
    expected = {}
    for data in files.values():
        s = data.summary
        origin = "forked" if data.header.forked else "executed"
        expected[(data.header.pid, origin)] = (data.header.ppid, s.allocs, s.bytes_allocated, s.max_live_bytes,
                                               s.bytes_allocated - s.bytes_freed, " ".join(data.program.argv))
    assert rows == expected
    shell = next(data for data in files.values() if data.program.argv[:1] == ["bash"] and not data.header.forked)
    children = [data for data in files.values() if data is not shell]
    assert {data.header.ppid for data in children} == {shell.header.pid}
    # Each child pid forked once and then ran its program.
    assert sorted((data.header.pid, data.header.forked) for data in children) == sorted(
        (pid, forked) for pid in {data.header.pid for data in children} for forked in (False, True))
    assert "  most live     per process, in the process table: the processes' peaks do not add up" in lines
    data = json.loads(mprof("report", "--format", "json", *pipeline).stdout)
    assert data["summary"]["max_live_bytes"] is None
    assert sorted(run["figures"]["max_live_bytes"] for run in data["runs"]) == sorted(
        row[3] for row in expected.values())


@pytest.mark.slow
def test_one_program_alone(pipeline: list[Path], tmp_path: Path) -> None:
    [sort_file] = [path for path in pipeline if program_of(path) == "sort"]
    alone = mprof("report", "--all", sort_file).stdout
    assert not alone.startswith("Processes:")
    assert mprof("report", "--all", "--program", "sort", *pipeline).stdout == alone
    assert mprof("report", "--format", "json", "--program", "/usr/bin/sort", *pipeline).stdout == mprof(
        "report", "--format", "json", sort_file).stdout
    database = tmp_path / "sort.db"
    mprof("db", "--program", "sort", *pipeline, "-o", database)
    assert mprof("report", "--all", database).stdout == alone
    # Two programs; a pid: the fork child and the program it became.
    two = mprof("report", "--tables", "summary", "--program", "sort", "--program", "wc", *pipeline).stdout
    assert two.startswith("Processes: 2,")
    pid = datafile.read(sort_file).header.pid
    by_pid = mprof("report", "--tables", "summary", "--pid", str(pid), *pipeline).stdout.splitlines()
    assert [line.split()[0:3:2] for line in by_pid[3:5]] == [[str(pid), "forked"], [str(pid), "executed"]]
    assert by_pid[5:7] == ["", "Program summary (the processes above, added up)"]


@pytest.mark.slow
def test_choices_that_match_nothing(pipeline: list[Path], tmp_path: Path) -> None:
    missing = mprof("report", "--program", "awk", *pipeline, check=False)
    assert missing.returncode == 1 and missing.stdout == "" and missing.stderr.count("\n") == 1
    assert missing.stderr.startswith("mprof: the data files: no process matches --program awk; there are pid ")
    assert "(sort)" in missing.stderr
    database = tmp_path / "all.db"
    mprof("db", *pipeline, "-o", database)
    refused = mprof("report", "--pid", "1", database, check=False)
    assert refused.returncode == 1 and refused.stderr == (
        f"mprof: {database}: a profile database holds its processes merged: choose them when making it "
        f"(mprof db --pid/--program) or report their data files\n")
