"""Which tests exercise which C file, for tests/mutate/mutate_monitor.py:
every mutant of these files is run against its file's own tests (the
fastest and most direct first, as pytest -x stops at the first failure),
within its file's time limit.  The rest of monitor/*.c is sampled at random
against the fixed list RANDOM_DRAW_TESTS.

The limits are about five times the tests' time on an unloaded machine
(measured together, unmutated), so that a loaded machine does not pass for
a hang; a mutant still running at its limit has hung, and counts as killed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Covered:
    tests: tuple[str, ...]
    seconds: int  # a mutant still running its tests after this has hung


E2E = "tests/e2e/"
ATTACH = (E2E + "test_inject.py", E2E + "test_attach.py")
# The leak scan's files: its own tests, then memcheck's verdicts on the
# targets and on real programs.
LEAK_SCAN = Covered((E2E + "test_leak_scan.py", E2E + "test_leak_kinds.py", E2E + "test_leak_kinds_programs.py",
                     E2E + "test_stress.py"), 240)
INJECT = (E2E + "test_mutants_inject.py", *ATTACH)

FILES: dict[str, Covered] = {
    "monitor/attach.c": Covered(ATTACH, 120),
    # got.c routes the slots of mprof attach and of a second allocator's
    # prefix (prefixed.c) alike.
    "monitor/got.c": Covered((E2E + "test_allocator_prefix.py", *ATTACH), 120),
    "monitor/mapped.c": Covered((E2E + "test_mutants_mapped.py", E2E + "test_mutants_allocators.py",
                                 E2E + "test_mapped.py", E2E + "test_pools.py"), 180),
    "monitor/watch.c": Covered((E2E + "test_mutants_watch.py", E2E + "test_watch_requests.py",
                                E2E + "test_live_view.py"), 180),
    "monitor/pools.c": Covered((E2E + "test_mutants_pools.py", E2E + "test_allocator_api.py",
                                E2E + "test_pools.py"), 120),
    "monitor/live.c": Covered((E2E + "test_stress.py", E2E + "test_widgets.py", E2E + "test_exiting_threads.py",
                               E2E + "test_peak.py", E2E + "test_processes.py"), 90),
    "monitor/leak_scan.c": LEAK_SCAN,
    "monitor/reach.c": LEAK_SCAN,
    "monitor/heap_walk.c": LEAK_SCAN,
    "monitor/world.c": LEAK_SCAN,
    "monitor/memory_map.c": LEAK_SCAN,
    "inject/helper.c": Covered(ATTACH, 120),
    "inject/inject.c": Covered(INJECT, 120),
    "inject/safe_point.c": Covered(INJECT, 120),
    "inject/target.c": Covered(INJECT, 120),
}

# What every build of a mutant makes: a mutant's own product, and the
# previous mutant's (its source put back), as make remakes only what is
# out of date.
BUILD = ("build/libmprof.so", "build/mprof-inject", "build/libmprof-inject.so")

# The tests that check the monitor's figures against programs of known
# behaviour, for the random draw over the rest of monitor/; together about
# a minute.
RANDOM_DRAW_TESTS = (E2E + "test_boundaries.py", E2E + "test_widgets.py", E2E + "test_allocator_api.py",
                     E2E + "test_processes.py", E2E + "test_format_agreement.py", E2E + "test_endings.py",
                     E2E + "test_modules.py", E2E + "test_run.py", E2E + "test_unwinder.py",
                     E2E + "test_table_growth.py", E2E + "test_peak.py", E2E + "test_exact_paths.py")
RANDOM_DRAW_SECONDS = 600
