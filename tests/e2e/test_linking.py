"""The monitor linked into programs instead of preloaded, and an installed
mprof: the widgets example built three ways must report the same totals."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from e2e_support import REPO_ROOT
from mprof.reducer import datafile
from test_export import top

WIDGETS_SOURCE = REPO_ROOT / "examples" / "widgets.c"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make install` into a fresh prefix, as a packager would with DESTDIR."""
    prefix = Path("/opt/mprof-test")
    destdir = tmp_path_factory.mktemp("destdir")
    subprocess.run(["make", "-s", "-C", str(REPO_ROOT), "install", f"PREFIX={prefix}", f"DESTDIR={destdir}"],
                   check=True, capture_output=True)
    return destdir / prefix.relative_to("/")


def pkg_config(installed: Path, *arguments: str) -> list[str]:
    env = dict(os.environ, PKG_CONFIG_PATH=str(installed / "lib" / "pkgconfig"),
               PKG_CONFIG_SYSROOT_DIR="")
    completed = subprocess.run(["pkg-config", *arguments], env=env, capture_output=True, text=True, check=True)
    # The .pc files name the final prefix; the staged copy lives under DESTDIR.
    return completed.stdout.replace("/opt/mprof-test", str(installed)).split()


def widgets_totals(executable: Path, tmp_path: Path) -> tuple[int, int, int]:
    output = tmp_path / "linked.mprof"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}
    env.update(MPROF_OUTPUT=str(output))
    completed = subprocess.run([executable, "3000"], env=env, capture_output=True, text=True, check=True)
    red = int(completed.stdout.split()[3])
    s = datafile.read(output).summary
    return s.allocs, s.bytes_allocated, s.bytes_allocated - s.bytes_freed - 204 * red


@pytest.mark.slow
@pytest.mark.parametrize("flavour", ["mprof", "mprof-static"])
def test_relinked_widgets(installed: Path, tmp_path: Path, flavour: str) -> None:
    executable = tmp_path / f"widgets-{flavour}"
    subprocess.run(["cc", "-O0", "-g", "-o", executable, WIDGETS_SOURCE, *pkg_config(installed, "--libs", flavour)],
                   check=True)
    needed = subprocess.run(["readelf", "-d", executable], capture_output=True, text=True, check=True).stdout
    assert ("libmprof.so" in needed) == (flavour == "mprof")
    assert widgets_totals(executable, tmp_path) == (3000, 3000 * 204, 0)


@pytest.mark.go
@pytest.mark.slow
def test_installed_command_runs_and_reports(installed: Path, tmp_path: Path) -> None:
    output = tmp_path / "installed.mprof"
    widgets = REPO_ROOT / "build" / "widgets"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    # The staged launcher names the final prefix; point it at the staged copy.
    env.update(MPROF_PYROOT=str(installed / "lib" / "mprof" / "python"),
               MPROF_LIBRARY=str(installed / "lib" / "libmprof.so"),
               MPROF_RESOLVE=str(installed / "lib" / "mprof" / "mprof-resolve"),
               MPROF_REDUCE=str(installed / "lib" / "mprof" / "libmprof-reduce.so"))
    launcher = installed / "bin" / "mprof"
    # Installed as a package, with what it needs: nothing from the system's python3.
    python = installed / "lib" / "mprof" / "python"
    assert {"mprof-0.1.0.dist-info", "jinja2", "mprof"} <= {entry.name for entry in python.iterdir()}
    run = subprocess.run([launcher, "run", "--quiet", "-o", output, widgets, "2000"], env=env, check=True,
                         capture_output=True, text=True)
    assert run.stdout == "widgets 2000 red 999 blue 1001\n"
    report = subprocess.run([launcher, "report", "--format", "json", output], env=env, check=True,
                            capture_output=True, text=True)
    document = json.loads(report.stdout)
    summary = document["summary"]
    assert (summary["allocs"], summary["frees"], summary["kept_bytes"]) == (2000, 1001, 999 * 204)
    # The installed resolver names the functions: the red widgets are the leak.
    assert [(leak["path"], leak["kept_objects"]) for leak in document["leaks"]] == [
        ("main > make_red_widget > make_widget", 999)]
    # With protobuf and the module generated from pprof's schema.
    assert {"google", "mprof"} <= {entry.name for entry in python.iterdir()}
    exported = tmp_path / "installed.pb.gz"
    subprocess.run([launcher, "export", "--format", "pprof", "-o", exported, output], env=env, check=True)
    assert top(exported, "alloc_space")["make_widget"] == (2000 * 204, 2000 * 204)
    for page in ("man1/mprof.1", "man3/libmprof.3", "man5/mprof.5", "man5/mprof-profile.5"):
        assert (installed / "share" / "man" / page).read_bytes() == (REPO_ROOT / "man" / Path(page).name).read_bytes()
    assert (installed / "include" / "mprof.h").read_bytes() == (REPO_ROOT / "monitor" / "mprof.h").read_bytes()


def test_the_monitor_needs_no_cxx_runtime() -> None:
    needed = subprocess.run(["readelf", "-d", REPO_ROOT / "build" / "libmprof.so"], capture_output=True,
                            text=True, check=True).stdout
    libraries = sorted(line.split("[")[1].rstrip("]") for line in needed.splitlines() if "(NEEDED)" in line)
    assert not [name for name in libraries if "stdc++" in name or "gcc_s" in name], libraries


def make_secure(executable: Path) -> None:
    """Makes a program run with AT_SECURE when this user starts it: as root,
    set-user-ID to nobody; as anyone else, set-group-ID to one of the user's
    supplementary groups (the effective group then differs from the real
    one, which is all the kernel asks)."""
    if os.geteuid() == 0:
        shutil.chown(executable, user="nobody")
        executable.chmod(0o4755)
        return
    others = [group for group in os.getgroups() if group != os.getgid()]
    if not others:
        pytest.skip("a secure-execution program needs root or a supplementary group to run as")
    os.chown(executable, -1, others[0])
    executable.chmod(0o2755)


@pytest.mark.slow
def test_secure_execution_programs_are_left_alone(installed: Path) -> None:
    # ld.so ignores LD_PRELOAD for a program run with AT_SECURE, so the
    # monitor is linked in; it must then record nothing and write nothing,
    # in a directory where it could.
    directory = Path(tempfile.mkdtemp(prefix="mprof-secure-"))
    try:
        directory.chmod(0o1777)
        executable = directory / "widgets-secure"
        subprocess.run(["cc", "-O0", "-o", executable, WIDGETS_SOURCE,
                        *pkg_config(installed, "--libs", "mprof-static")], check=True)
        make_secure(executable)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
        env["MPROF_OUTPUT"] = str(directory / "secure.mprof")
        # ld.so shows the auxiliary vector only for a program that is not
        # secure: silence here is the kernel's AT_SECURE, seen independently.
        auxv = subprocess.run([executable, "1"], env={**env, "LD_SHOW_AUXV": "1"}, capture_output=True, text=True,
                              check=True)
        assert auxv.stdout == "widgets 1 red 0 blue 1\n"
        completed = subprocess.run([executable, "500"], env=env, capture_output=True, text=True, check=True)
        assert completed.stdout == "widgets 500 red 261 blue 239\n"
        assert completed.stderr == ""
        assert sorted(p.name for p in directory.iterdir()) == ["widgets-secure"]
        # The same program without the special bits is profiled.
        executable.chmod(0o755)
        shown = subprocess.run([executable, "1"], env={**env, "LD_SHOW_AUXV": "1",
                                                       "MPROF_OUTPUT": str(directory / "auxv.mprof")},
                               capture_output=True, text=True).stdout
        assert re.search(r"^AT_SECURE: +0$", shown, re.MULTILINE)
        subprocess.run([executable, "500"], env=env, capture_output=True, check=True)
        assert datafile.read(directory / "secure.mprof").summary.allocs == 500
    finally:
        shutil.rmtree(directory)
