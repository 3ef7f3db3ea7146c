"""The reducer and mprof-resolve when paths say strange things: a newline
that could pass for a command, an empty path, a FIFO in a library's place,
a resolver that never answers.  Every case ends, in one line at most."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

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
                              paths=[((0x1234,), 1, 0, (8, 0, 0, 0), (0, 0, 0, 0))])
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


@pytest.mark.slow
def test_a_program_and_library_under_a_path_with_odd_bytes(tmp_path: Path) -> None:
    # Not UTF-8, a newline, a TAB and an escape sequence, in the directory of
    # both the program and the library it loads, and so in its arguments.
    directory = Path(os.fsdecode(bytes(tmp_path) + b"/odd\xff\n\t\x1b[31m"))
    directory.mkdir()
    subprocess.run(["gcc", "-O0", "-g", "-shared", "-fPIC", "-o", directory / "libplugin.so",
                    REPO_ROOT / "tests" / "targets" / "plugin.c"], check=True)
    subprocess.run(["gcc", "-O0", "-g", "-o", directory / "dlmain", REPO_ROOT / "tests" / "targets" / "dlclose_main.c",
                    "-ldl"], check=True)
    output = tmp_path / "odd.mprof"
    subprocess.run([MPROF, "run", "--quiet", "-o", output, directory / "dlmain", directory / "libplugin.so"],
                   check=True, capture_output=True, timeout=60)
    shown = f"{tmp_path}/odd\\xff\\x0a\\x09\\x1b[31m"
    text = subprocess.run([MPROF, "report", "--tables", "summary,leaks", output], capture_output=True, text=True,
                          timeout=60)
    assert (text.returncode, text.stderr) == (0, "")
    assert f"{shown}/dlmain {shown}/libplugin.so" in text.stdout and "main > plugin_allocate" in text.stdout
    report_json = json.loads(subprocess.run([MPROF, "report", "--format", "json", output], capture_output=True,
                                            text=True, check=True, timeout=60).stdout)
    assert report_json["runs"][0]["command_line"] == f"{shown}/dlmain {shown}/libplugin.so"
    subprocess.run([MPROF, "html", output, "-o", tmp_path / "odd.html"], check=True, timeout=60)
    assert f"{shown}/dlmain" in (tmp_path / "odd.html").read_text(encoding="utf-8")
    subprocess.run([MPROF, "db", output, "-o", tmp_path / "odd.db"], check=True, timeout=60)
    with sqlite3.connect(tmp_path / "odd.db") as db:
        paths = {row[0] for row in db.execute("SELECT path FROM modules")}
    assert os.fsencode(directory / "libplugin.so") in paths  # the bytes themselves


def test_an_empty_module_path_is_a_warning_not_a_hang(tmp_path: Path) -> None:
    completed = report(with_one_module(tmp_path, b""))
    assert completed.returncode == 0
    assert completed.stderr == "mprof: warning: mprof-resolve: module: empty path\n"
    assert "0x1234" in completed.stdout  # unresolved, shown as it is


def test_a_warning_about_an_odd_path_is_one_escaped_line(tmp_path: Path) -> None:
    # Found by tests/fuzz: the path came out raw, newline and escape included.
    completed = report(with_one_module(tmp_path, b"/nonexistent/odd\n\x1b[31mlib.so"))
    assert completed.returncode == 0
    assert completed.stderr == "mprof: warning: /nonexistent/odd\\x0a\\x1b[31mlib.so: file not found\n"


def test_a_fifo_in_a_librarys_place(tmp_path: Path) -> None:
    fifo = tmp_path / "libfifo.so"
    os.mkfifo(fifo)
    completed = report(with_one_module(tmp_path, os.fsencode(fifo)))
    assert completed.returncode == 0
    assert completed.stderr == f"mprof: warning: {fifo}: not a regular file\n"
    assert "libfifo.so+0x234" in completed.stdout


@pytest.mark.slow
def test_a_resolver_that_never_answers(tmp_path: Path) -> None:
    silent = tmp_path / "silent-resolver"
    silent.write_text("#!/bin/sh\nexec sleep 600\n")
    silent.chmod(0o755)
    data = with_one_module(tmp_path, b"/usr/lib/libexample.so")
    completed = report(data, MPROF_RESOLVE=str(silent), MPROF_RESOLVE_TIMEOUT="1")
    assert completed.returncode == 1
    assert completed.stderr == "mprof: mprof-resolve gave no answer in 1 s declaring /usr/lib/libexample.so\n"
