"""The monitor linked into programs instead of preloaded, and an installed
mprof: the widgets example built three ways must report the same totals."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from e2e_support import REPO_ROOT

from mprof.reducer import datafile

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
    env.update(MPROF_OUTPUT=str(output), MPROF_QUIET="1")
    completed = subprocess.run([executable, "3000"], env=env, capture_output=True, text=True, check=True)
    red = int(completed.stdout.split()[3])
    s = datafile.read(output).summary
    return s.allocs, s.bytes_allocated, s.bytes_allocated - s.bytes_freed - 204 * red


@pytest.mark.parametrize("flavour", ["mprof", "mprof-static"])
def test_relinked_widgets(installed: Path, tmp_path: Path, flavour: str) -> None:
    executable = tmp_path / f"widgets-{flavour}"
    subprocess.run(["cc", "-O0", "-g", "-o", executable, WIDGETS_SOURCE, *pkg_config(installed, "--libs", flavour)],
                   check=True)
    needed = subprocess.run(["readelf", "-d", executable], capture_output=True, text=True, check=True).stdout
    assert ("libmprof.so" in needed) == (flavour == "mprof")
    assert widgets_totals(executable, tmp_path) == (3000, 3000 * 204, 0)


def test_installed_command_runs_and_reports(installed: Path, tmp_path: Path) -> None:
    output = tmp_path / "installed.mprof"
    widgets = REPO_ROOT / "build" / "widgets"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    # The staged launcher names the final prefix; point it at the staged copy.
    env.update(MPROF_PYROOT=str(installed / "lib" / "mprof" / "python"),
               MPROF_LIBRARY=str(installed / "lib" / "libmprof.so"))
    launcher = installed / "bin" / "mprof"
    subprocess.run([launcher, "run", "--quiet", "-o", output, widgets, "2000"], env=env, check=True,
                   capture_output=True)
    report = subprocess.run([launcher, "report", "--format", "json", output], env=env, check=True,
                            capture_output=True, text=True)
    assert json.loads(report.stdout)["summary"]["allocs"] == 2000
    for page in ("man1/mprof.1", "man3/libmprof.3", "man5/mprof.5"):
        assert (installed / "share" / "man" / page).is_file()
    assert (installed / "include" / "mprof.h").is_file()
