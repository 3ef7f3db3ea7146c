"""Makes the source tree importable as `mprof`, as cli/entry.py does."""

from __future__ import annotations

import sys
import types
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def _install_alias() -> None:
    package = types.ModuleType("mprof")
    package.__path__ = [str(REPO_ROOT)]
    sys.modules["mprof"] = package


# At import time, not in a fixture: test modules import mprof.* at their top,
# which pytest runs after this conftest is imported but before any fixture.
_install_alias()
