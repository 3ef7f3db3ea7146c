"""The Python half as a standard package: set-up installs it editable into
the venv, with the console script mprof, so that tools and other code
import mprof like any other package, from any directory."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from e2e_support import BUILD, REPO_ROOT

VENV_BIN = REPO_ROOT / ".venv" / "bin"


def test_the_venv_imports_mprof_from_the_tree_from_anywhere(tmp_path: Path) -> None:
    # tmp_path: no src/ on the path but what the installation put there.
    script = ("import importlib.metadata, json, mprof.reducer, mprof.report.model; "
              "print(json.dumps([importlib.metadata.version('mprof'), mprof.reducer.__file__, "
              "[entry.value for entry in importlib.metadata.entry_points(group='console_scripts', name='mprof')]]))")
    completed = subprocess.run([VENV_BIN / "python", "-I", "-c", script], cwd=tmp_path, capture_output=True,
                               text=True, check=True)
    version, reducer, scripts = json.loads(completed.stdout)
    assert version == "0.1.0"
    assert Path(reducer) == REPO_ROOT / "src" / "mprof" / "reducer" / "__init__.py"
    assert scripts == ["mprof.cli.main:console"]


def test_the_console_script_profiles_and_reports(tmp_path: Path) -> None:
    output = tmp_path / "widgets.mprof"
    run = subprocess.run([VENV_BIN / "mprof", "run", "--quiet", "-o", output, BUILD / "widgets", "1000"],
                         cwd=tmp_path, capture_output=True, text=True, check=True)
    _, count, _, red, _, blue = run.stdout.split()
    assert (int(count), int(red) + int(blue)) == (1000, 1000)
    report = subprocess.run([VENV_BIN / "mprof", "report", "--format", "json", output], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    summary = json.loads(report.stdout)["summary"]
    # Each widget is 204 bytes; the red ones are never freed.
    assert (summary["allocs"], summary["frees"], summary["kept_bytes"]) == (1000, int(blue), int(red) * 204)
