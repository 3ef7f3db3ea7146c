"""Makes the source tree importable as `mprof`, as cli/entry.py does."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "bench"))

import source_tree  # noqa: E402

# At import time, not in a fixture: test modules import mprof.* at their top,
# which pytest runs after this conftest is imported but before any fixture.
source_tree.install()
