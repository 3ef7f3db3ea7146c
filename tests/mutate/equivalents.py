"""Reads tests/mutate/equivalent.txt, the surviving mutants no test can tell
from the code, for mutmut_summary.py (mutmut's names) and
mutate_monitor.py (path:line:before->after keys)."""

from __future__ import annotations

from pathlib import Path

LIST = Path(__file__).with_name("equivalent.txt")


def read() -> dict[str, str]:
    """Mutant name or key -> why it cannot be told apart from the code."""
    explained = {}
    for line in LIST.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, reason = line.split(None, 1)
            explained[name] = reason
    return explained
