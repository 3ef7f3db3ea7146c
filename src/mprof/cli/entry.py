"""The launchers' target (./mprof in the tree, bin/mprof installed): puts
the directory that holds the package mprof (src/ in the tree, or
MPROF_PYROOT) first on the module path, so that the launcher runs the
tree's or the installation's own copy whatever else python3 has installed,
and runs the command.  (The venv's console script, .venv/bin/mprof, goes
straight to mprof.cli.main:console.)

Kept to syntax that Python 3.7 parses, so that an older python3 reaches
the version message instead of a SyntaxError.
"""

from __future__ import annotations

import os
import sys


def _package_parent() -> str:
    here = os.path.dirname(os.path.realpath(__file__))  # .../mprof/cli
    return os.environ.get("MPROF_PYROOT") or os.path.dirname(os.path.dirname(here))


def launch() -> int:
    if sys.version_info < (3, 11):  # noqa: UP036 - the launcher may have found an older python3
        sys.stderr.write("mprof: needs Python 3.11 or newer\n")
        return 1
    # Python put this file's directory first on sys.path; its modules
    # (main, run, ...) must only be reached as mprof.cli.*, never shadow
    # top-level ones.
    here = os.path.dirname(os.path.realpath(__file__))
    sys.path[:] = [_package_parent()] + [p for p in sys.path if os.path.realpath(p or ".") != here]
    from mprof.cli.main import console

    return console()


if __name__ == "__main__":
    sys.exit(launch())
