"""Where a source tree keeps what make builds, for mprof run from the tree
(./mprof): the installed launcher names the monitor and its helpers in
MPROF_LIBRARY, MPROF_RESOLVE, MPROF_REDUCE, MPROF_REPLAY and MPROF_INJECT
instead."""

from __future__ import annotations

import os
from pathlib import Path

from .reducer.errors import MprofError

# src/mprof/source_tree.py: the tree's root is two directories above the package.
BUILD = Path(__file__).resolve().parents[2] / "build"


def built(variable: str, name: str, what: str) -> Path:
    """The file the launcher names in variable, else the tree's build/name;
    one that is not there is an error that says to build it."""
    configured = os.environ.get(variable)
    path = Path(configured) if configured else BUILD / name
    if not path.is_file():
        raise MprofError(f"{path}: {what} not found (run make first)")
    return path
