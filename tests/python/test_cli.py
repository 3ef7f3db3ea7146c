"""The mprof command line, run as a user runs it: the launcher script."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from datafile_builder import DataFileBuilder, ModuleSpec
from mprof.cli import inputs
from mprof.cli.main import main
from samples import rich

REPO_ROOT = Path(__file__).resolve().parents[2]

MPROF = REPO_ROOT / "mprof"


def mprof(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MPROF), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "MPROF_PYROOT"},
    )


def assert_one_error_line(result: subprocess.CompletedProcess[str], needle: str) -> str:
    assert result.returncode == 1
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("mprof: ")
    assert needle in lines[0]
    return lines[0]


def test_dump_json(tmp_path: Path) -> None:
    path = tmp_path / "good.mprof"
    path.write_bytes(rich().build())
    result = mprof("dump", "--format", "json", path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    summary = json.loads(result.stdout)["summary"]
    assert summary["allocs"] == 100
    assert summary["frees"] == 60
    assert summary["bytes_allocated"] == 5000
    assert summary["bytes_freed"] == 3000
    assert summary["kept_objects"] == 40
    assert summary["kept_bytes"] == 2000
    assert summary["max_live_objects"] == 45
    assert summary["max_live_bytes"] == 2600


def test_dump_text(tmp_path: Path) -> None:
    path = tmp_path / "good.mprof"
    path.write_bytes(rich().build())
    result = mprof("dump", path)
    assert result.returncode == 0, result.stderr
    assert "allocs:    100\n" in result.stdout
    assert "max live:  45 objects, 2600 bytes\n" in result.stdout


def test_report_corrupt_file(tmp_path: Path) -> None:
    data = bytearray(rich().build())
    data[100] ^= 0xFF
    path = tmp_path / "bad.mprof"
    path.write_bytes(bytes(data))
    line = assert_one_error_line(mprof("report", "--format", "json", path), str(path))
    assert line == f"mprof: {path}: corrupt: checksum mismatch"


def test_report_truncated_file(tmp_path: Path) -> None:
    path = tmp_path / "cut.mprof"
    path.write_bytes(rich().build()[:-20])
    line = assert_one_error_line(mprof("report", "cut.mprof", cwd=tmp_path), "cut.mprof")
    assert line.startswith("mprof: cut.mprof: truncated: ")


def test_report_missing_file(tmp_path: Path) -> None:
    line = assert_one_error_line(mprof("report", "nope.mprof", cwd=tmp_path), "nope.mprof")
    assert line == "mprof: nope.mprof: cannot open: No such file or directory"


def test_launcher_through_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    link = tmp_path / "bin" / "mprof"
    link.symlink_to(MPROF)
    good = tmp_path / "good.mprof"
    good.write_bytes(DataFileBuilder().build())
    result = subprocess.run(
        [str(link), "dump", "--format", "json", str(good)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["header"]["pid"] == 4242


def test_usage_errors_exit_2() -> None:
    result = mprof("report", "--format", "xml", "f")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert mprof().returncode == 2


def test_main_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "good.mprof"
    path.write_bytes(rich().build())
    assert main(["dump", "--format", "json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["kept_bytes"] == 2000

    path.write_bytes(b"not a profile")
    assert main(["report", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"mprof: {path}: not an mprof data file (bad magic)\n"

    assert main(["--help"]) == 0
    assert "report" in capsys.readouterr().out


def test_files_whose_figures_overflow_together(tmp_path: Path) -> None:
    # Each file is valid alone; merged, the bytes allocated pass 2^64.  The
    # library that is gone earns a warning on the way, which the refusal
    # leaves out: one line (found by tests/fuzz).
    top = (1 << 64) - 1
    gone = ModuleSpec(0, 0x1000, 0x2000, path=str(tmp_path / "libgone.so").encode())
    first, second = tmp_path / "first.mprof", tmp_path / "second.mprof"
    for pid, path in enumerate((first, second), start=100):
        path.write_bytes(DataFileBuilder(pid=pid, modules=[gone],
                                         paths=[((0x1800,), 1, 0, (top, 0, 0, 0), (0,) * 4)]).build())
    alone = mprof("report", first)
    assert alone.returncode == 0
    assert alone.stderr == f"mprof: warning: {tmp_path}/libgone.so: file not found\n"
    (tmp_path / "kept.db").write_bytes(b"before")
    result = mprof("db", first, second, "-o", tmp_path / "kept.db")
    assert_one_error_line(result, f"{first}, {second}: figures add up past 64 bits")
    assert (tmp_path / "kept.db").read_bytes() == b"before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.mprof", "kept.db", "second.mprof"]


@pytest.mark.slow
def test_diff_reduces_its_sides_together_and_speaks_in_their_order(tmp_path: Path) -> None:
    # The two sides are reduced side by side (cli/inputs.load_profiles); what
    # they say comes out as if one came after the other: the base's warning,
    # then the new side's error; and a base refused ends it before the new
    # side's warning.
    gone = ModuleSpec(0, 0x1000, 0x2000, path=str(tmp_path / "libgone.so").encode())
    warned, bad = tmp_path / "warned.mprof", tmp_path / "bad.mprof"
    warned.write_bytes(DataFileBuilder(modules=[gone], paths=[((0x1800,), 1, 0, (8, 0, 0, 0), (0,) * 4)]).build())
    bad.write_bytes(b"MPROFDAT")
    warning = f"mprof: warning: {tmp_path}/libgone.so: file not found"
    later = mprof("diff", "--no-pager", warned, bad)
    assert later.returncode == 1 and later.stdout == ""
    [said, error] = later.stderr.splitlines()
    assert said == warning and error.startswith(f"mprof: {bad}: ")
    first = mprof("diff", "--no-pager", bad, warned)
    assert first.returncode == 1 and first.stderr.splitlines() == [error]
    both = mprof("diff", "--no-pager", warned, warned)
    assert both.returncode == 0 and both.stderr.splitlines() == [warning, warning]


def test_a_side_reduced_in_its_own_process_says_what_stopped_it(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Each side but the first is reduced in a forked process: a bug there
    # is the caller's exception, with the child's traceback, not a hang or
    # a side quietly missing; the first side, in this process, goes on.
    first, second = tmp_path / "first.mprof", tmp_path / "second.mprof"
    for path in (first, second):
        path.write_bytes(DataFileBuilder(paths=[((0x1800,), 1, 0, (8, 0, 0, 0), (0,) * 4)]).build())
    prepare = inputs._prepare

    def failing_on_the_second(prepared: inputs.Prepared) -> None:
        if prepared.paths == [second]:
            raise ValueError("a bug in the reduction")
        prepare(prepared)

    monkeypatch.setattr(inputs, "_prepare", failing_on_the_second)
    with pytest.raises(RuntimeError) as raised:
        inputs.load_profiles([[first], [second]])
    assert str(raised.value).startswith(f"the reduction of {second} failed:\nTraceback")
    assert "ValueError: a bug in the reduction" in str(raised.value)
    [base, new] = inputs.load_profiles([[first], [first]])
    assert base.result().summary == new.result().summary


def test_diff_of_databases_through_pipes(tmp_path: Path) -> None:
    data = tmp_path / "one.mprof"
    data.write_bytes(DataFileBuilder(paths=[((0x1800,), 3, 1, (48, 0, 0, 0), (16, 0, 0, 0))]).build())
    database = tmp_path / "one.db"
    assert mprof("db", data, "-o", database).returncode == 0
    piped = subprocess.run(["bash", "-c", f"'{MPROF}' diff --no-pager <(cat '{database}') <(cat '{data}')"],
                           capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert "blocks allocated                     3              3              0" in piped.stdout
