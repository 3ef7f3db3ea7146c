"""Makes the source tree importable as `mprof` for the bench scripts and the
tests, with cli/entry.py's install_alias (loaded by path, since `mprof` does
not exist until it has run)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def install() -> None:
    spec = importlib.util.spec_from_file_location("mprof_entry", REPO_ROOT / "cli" / "entry.py")
    assert spec and spec.loader
    entry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(entry)
    entry.install_alias()
