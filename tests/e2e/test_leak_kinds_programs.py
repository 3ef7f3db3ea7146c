"""mprof's definitely and indirectly lost blocks (issue 49) against memcheck's on real programs: Debian's python3
(PYTHONMALLOC=malloc), gawk, perl and sqlite3, and a C++ program built at -O2 (tests/targets/cache_server.cc)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from leak_kinds_support import under_memcheck, under_mprof

pytestmark = [pytest.mark.valgrind, pytest.mark.slow]

SQL = ("create table t(k integer primary key, v text); "
       "with recursive n(i) as (select 1 union all select i + 1 from n where i < 500) "
       "insert into t select i, printf('value %d', i) from n; "
       "create index tv on t(v); select count(*), sum(length(v)) from t where v like 'value 1%';")

# What memcheck says of each here (Debian 12, valgrind 3.19), definitely and indirectly lost as (blocks, bytes):
# perl frees nothing at exit by design, and drops some of its start-up strings; cache_server.cc leaks its 100
# sessions (48 bytes each) with the vector of 100 ints each owns.  The others lose nothing: every block they keep
# is still reachable or possibly lost, and counting one of those as lost is the error this checks.
PROGRAMS: dict[str, tuple[list[str], dict[str, str], tuple[tuple[int, int], tuple[int, int]]]] = {
    "python3": (["/usr/bin/python3", "-c", 'import json, re; print(len(json.dumps({"a": [1]*100})))'],
                {"PYTHONMALLOC": "malloc"}, ((0, 0), (0, 0))),
    "gawk": (["gawk", "BEGIN { for (i = 0; i < 100; i++) a[i] = i * 2; print length(a) }"], {}, ((0, 0), (0, 0))),
    "perl": (["perl", "-e", 'my %h = map { $_ => $_ * 2 } 1..100; print scalar(keys %h), "\\n"'], {},
             ((30, 10_517), (15, 44_060))),
    "sqlite3": (["sqlite3", ":memory:", SQL], {}, ((0, 0), (0, 0))),
}


def environment(extra: dict[str, str]) -> dict[str, str]:
    # Locale and the like as the test run has them, the same for both runs; no monitor settings of the run's own.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}
    env.update(extra)
    return env


def agree(command: list[str | Path], env: dict[str, str], tmp_path: Path) -> tuple[tuple[int, int], tuple[int, int]]:
    """memcheck's definitely and indirectly lost, once mprof's have been found the same."""
    memcheck = under_memcheck(command, frozenset(), env=env, cwd=tmp_path)
    ours = under_mprof(command, frozenset(), tmp_path, env=env, cwd=tmp_path)
    lost = (memcheck.totals["definite"], memcheck.totals["indirect"])
    assert (ours.totals["definite"], ours.totals["indirect"]) == lost
    return lost


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_debian_programs_lose_what_memcheck_says(name: str, tmp_path: Path) -> None:
    command, extra, expected = PROGRAMS[name]
    assert agree(list(command), environment(extra), tmp_path) == expected


def test_a_cxx_program_at_O2_loses_what_memcheck_says(cache_server_program: Path, tmp_path: Path) -> None:
    assert agree([cache_server_program], environment({}), tmp_path) == ((100, 4800), (100, 40_000))
