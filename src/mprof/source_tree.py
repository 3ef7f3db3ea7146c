"""Where a source tree keeps what make builds, for mprof run from the tree
(./mprof): the installed launcher names the monitor and the resolver in
MPROF_LIBRARY, MPROF_RESOLVE and MPROF_REDUCE instead."""

from __future__ import annotations

from pathlib import Path

# src/mprof/source_tree.py: the tree's root is two directories above the package.
BUILD = Path(__file__).resolve().parents[2] / "build"
