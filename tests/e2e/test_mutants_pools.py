"""Pool announcements that name nothing, which a mutation audit found
unchecked (make mutate): a pool made with a NULL anchor is none, and a
NULL object is no object.  tests/targets/pool_nulls.c says what it
announces."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from e2e_support import REPO_ROOT, Run, Targets, mprof

MONITOR_HEADERS = f"-I{REPO_ROOT / 'monitor'}"


@pytest.mark.slow
def test_a_null_anchor_or_object_is_not_counted(targets: Targets, profile: Callable[..., Run]) -> None:
    run = profile([targets.build("pool_nulls", MONITOR_HEADERS)])
    data = run.data()
    # The malloc-like blocks' frame (no name), then the pool's.
    assert [pool.name for pool in data.pools] == ["", "real"]
    assert (data.summary.allocs, data.summary.frees, data.summary.pool_alloc_calls) == (5, 1, 5)
    text = mprof("report", "--no-pager", "--tables", "direct", "--all", run.output).stdout
    # Allocated bytes, kept bytes and calls of each frame.
    rows = {match[4]: (int(match[1]), int(match[2]), int(match[3]))
            for match in re.finditer(r"^ +\d+ +(\d+) +\d+ +(\d+) +\d+ +(\d+)  (\[[^]]+\])", text, re.MULTILINE)}
    assert rows == {"[malloc-like blocks]": (96, 96, 3), "[pool real]": (32, 16, 2)}, text
