"""The program and its modules as the data file names them, whatever the
machine lacks or the way the program was started."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import BUILD, MPROF, Run, Targets, monitor_env
from mprof.reducer import datafile

WIDGETS = BUILD / "widgets"


def report(path: Path, *tables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MPROF, "report", "--tables", ",".join(tables), path], capture_output=True, text=True,
                          timeout=120)


def test_without_proc_the_loader_names_the_program(tmp_path: Path) -> None:
    program = tmp_path / "widgets"
    shutil.copy(WIDGETS, program)
    output = tmp_path / "noproc.mprof"
    # A mount namespace whose /proc is an empty tmpfs, as in a chroot or a
    # minimal container; the program started by a relative name.
    # Only the program has the monitor: the shell exports it just before.
    env = monitor_env(output)
    env["MONITOR"] = env.pop("LD_PRELOAD")
    command = 'mount -t tmpfs none /proc && export LD_PRELOAD="$MONITOR" && exec "$@"'
    completed = subprocess.run(["unshare", "--mount", "sh", "-c", command, "sh", "./widgets", "100"], cwd=tmp_path,
                               env=env, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    data = datafile.read(output)
    assert Path(data.program.exe) == program and data.program.argv == ["./widgets", "100"]
    assert all(module.path for module in data.modules)
    text = report(output, "leaks")
    assert text.returncode == 0 and "main > make_red_widget > make_widget" in text.stdout


def test_a_program_started_through_the_loader(tmp_path: Path) -> None:
    output = tmp_path / "ld.mprof"
    subprocess.run(["/lib64/ld-linux-x86-64.so.2", WIDGETS, "100"], env=monitor_env(output), check=True,
                   capture_output=True, timeout=60)
    data = datafile.read(output)
    assert Path(data.program.exe).resolve() == WIDGETS.resolve() and data.program.argv == [str(WIDGETS), "100"]
    text = report(output, "leaks")
    assert text.returncode == 0 and text.stderr == ""  # no build-id warning: the loader is not taken for it
    assert "main > make_red_widget > make_widget" in text.stdout


@pytest.mark.slow
def test_a_library_loaded_below_its_link_address(targets: Targets, profile: Callable[..., Run],
                                                tmp_path: Path) -> None:
    # Linked at 2^47, past user space: the loader puts it lower, and its bias
    # is negative, an unsigned 64-bit value past SQLite's INTEGER.
    library = targets.build("libhigh.so", "-Wl,-Ttext-segment=0x800000000000", source="plugin.c", shared=True)
    run = profile([targets.build("dlclose_main", "-ldl"), library])
    [module] = [m for m in run.data().modules if Path(m.path) == library]
    assert module.bias >= 1 << 63
    text = report(run.output, "leaks")
    assert text.returncode == 0 and "main > plugin_allocate" in text.stdout and "77" in text.stdout
    database = tmp_path / "high.db"
    subprocess.run([MPROF, "db", run.output, "-o", database], check=True, timeout=120)
    with sqlite3.connect(database) as db:
        [(bias,)] = db.execute("SELECT bias FROM modules WHERE path = ?", (str(library),)).fetchall()
    assert bias < 0 and bias + (1 << 64) == module.bias  # two's complement, as schema.sql says


@pytest.mark.slow
def test_three_hundred_libraries_with_long_paths(targets: Targets, profile: Callable[..., Run],
                                                 tmp_path: Path) -> None:
    plugin = targets.build("libplugin.so", source="plugin.c", shared=True)
    deep = tmp_path.joinpath(*[f"{level:02d}" + "d" * 248 for level in range(15)])
    deep.mkdir(parents=True)
    copies = []
    for number in range(300):
        copy = deep / f"libplugin_{number:03d}.so"
        shutil.copy(plugin, copy)
        copies.append(copy)
    assert sum(len(str(copy)) for copy in copies) > 1 << 20
    (tmp_path / "list").write_text("".join(f"{copy}\n" for copy in copies))
    run = profile([targets.build("many_plugins", "-ldl"), tmp_path / "list"])
    assert run.completed.stdout.startswith("300 loaded")
    data = run.data()
    assert {Path(m.path) for m in data.modules} >= set(copies)
    text = report(run.output, "leaks")
    assert "main > plugin_allocate" in text.stdout and "4,242" in text.stdout


def test_a_build_id_after_other_notes(targets: Targets, profile: Callable[..., Run]) -> None:
    program = targets.build("notes_first", "-Wl,--build-id=none")
    run = profile([program])
    [module] = [m for m in run.data().modules if Path(m.path) == program]
    assert module.build_id == bytes(range(1, 21))  # notes_first.c's own id
    # The file's id, read by libdw, agrees: main, its one allocator (40
    # bytes), is named, unwarned.
    report = subprocess.run([MPROF, "report", "--format", "json", run.output], capture_output=True, text=True,
                            check=True)
    assert report.stderr == ""
    direct = [(row["function"], row["calls"], row["bytes"]) for row in json.loads(report.stdout)["direct"]]
    assert ("main", 1, 40) in direct
