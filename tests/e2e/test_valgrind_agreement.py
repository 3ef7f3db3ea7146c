"""mprof's totals against valgrind memcheck's for the same runs of real
Debian programs (bench/valgrind_compare.py at a small scale)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from e2e_support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
import valgrind_compare  # noqa: E402

pytestmark = pytest.mark.valgrind


@pytest.mark.parametrize("name", ["gawk", "perl", "python3", "sqlite3"])
def test_totals_agree_with_memcheck(name: str, tmp_path: Path) -> None:
    [result] = valgrind_compare.compare([name], 0.01, tmp_path)
    assert result.mprof.allocs > 1000
    assert (result.mprof.allocs, result.mprof.frees) == (result.memcheck.allocs, result.memcheck.frees)
    if result.address_dependent_sizes:
        # Python prints addresses into some of its strings (reprs), and
        # valgrind's heap lies elsewhere than glibc's, with addresses of
        # other lengths: the same blocks, a few bytes apart, depending on
        # where each run's layout falls.
        assert abs(result.mprof.bytes_allocated - result.memcheck.bytes_allocated) < (
            result.memcheck.bytes_allocated // 1000)
        assert result.mprof.kept_bytes == result.memcheck.kept_bytes
    else:
        assert result.mprof == result.memcheck
