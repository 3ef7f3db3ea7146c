"""The reducer and mprof-resolve when paths say strange things: a newline
that could pass for a command, an empty path, a FIFO in a library's place,
a resolver that never answers.  Every case ends, in one line at most."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from e2e_support import BUILD, MPROF, REPO_ROOT, monitor_env

sys.path.insert(0, str(REPO_ROOT / "tests" / "python"))
from datafile_builder import DataFileBuilder, ModuleSpec  # noqa: E402

WIDGETS = BUILD / "widgets"


def report(path: Path, **environment: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MPROF, "report", "--tables", "leaks", path], capture_output=True, text=True, timeout=60,
                          env=os.environ | environment)


def with_one_module(tmp_path: Path, path: bytes) -> Path:
    """A data file whose only leak is in a module at path."""
    builder = DataFileBuilder(modules=[ModuleSpec(0x1000, 0x1000, 0x3000, path=path)],
                              sites=[(0x1234, 1, 0, (8, 0, 0, 0), (0, 0, 0, 0))],
                              leaks=[((0x1234,), 1, 0, 8, 0)])
    output = tmp_path / "one.mprof"
    output.write_bytes(builder.build())
    return output


def test_a_newline_in_a_path_is_no_command(tmp_path: Path) -> None:
    directory = tmp_path / "dir\nquit"
    directory.mkdir()
    shutil.copy(WIDGETS, directory / "widgets")
    output = tmp_path / "nl.mprof"
    subprocess.run([directory / "widgets", "100"], env=monitor_env(output), check=True, capture_output=True)
    completed = report(output)
    assert (completed.returncode, completed.stderr) == (0, "")
    assert "main > make_red_widget > make_widget" in completed.stdout


def test_an_empty_module_path_is_a_warning_not_a_hang(tmp_path: Path) -> None:
    completed = report(with_one_module(tmp_path, b""))
    assert completed.returncode == 0
    assert completed.stderr == "mprof: warning: mprof-resolve: module: empty path\n"
    assert "0x1234" in completed.stdout  # unresolved, shown as it is


def test_a_fifo_in_a_librarys_place(tmp_path: Path) -> None:
    fifo = tmp_path / "libfifo.so"
    os.mkfifo(fifo)
    completed = report(with_one_module(tmp_path, os.fsencode(fifo)))
    assert completed.returncode == 0
    assert completed.stderr == f"mprof: warning: {fifo}: not a regular file\n"
    assert "libfifo.so+0x234" in completed.stdout


def test_a_resolver_that_never_answers(tmp_path: Path) -> None:
    silent = tmp_path / "silent-resolver"
    silent.write_text("#!/bin/sh\nexec sleep 600\n")
    silent.chmod(0o755)
    data = with_one_module(tmp_path, b"/usr/lib/libexample.so")
    completed = report(data, MPROF_RESOLVE=str(silent), MPROF_RESOLVE_TIMEOUT="1")
    assert completed.returncode == 1
    assert completed.stderr == "mprof: mprof-resolve gave no answer in 1 s declaring /usr/lib/libexample.so\n"
