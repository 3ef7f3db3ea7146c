"""What every test shares: an environment in which mprof asks no server,
the longest modules first, and what tests measured in the summary."""

from __future__ import annotations

import os

import pytest

# Debian's libdebuginfod-common sets DEBUGINFOD_URLS in login shells, and
# the resolver then asks that server for every module without debug
# information: a test run must not depend on the network.  The tests of
# debuginfod start a server of their own and name it.
os.environ.pop("DEBUGINFOD_URLS", None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules of the fuzzers first, then those with slow tests, then
    the rest, each module's tests together and in their order: make check
    hands whole modules to its workers (--dist loadfile), and the longest
    handed out first keep both busy to the end."""
    def weight(item: pytest.Item) -> int:
        return 0 if item.get_closest_marker("fuzz") else 1 if item.get_closest_marker("slow") else 2

    modules: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        modules[module] = min(modules.get(module, 2), weight(item))
    order = {module: (heaviness, position) for position, (module, heaviness) in enumerate(modules.items())}
    items.sort(key=lambda item: order[item.nodeid.split("::")[0]])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What tests measured and recorded (record_property): how many inputs
    each fuzzer tried (tests/e2e/fuzzing.py), how long a big page took."""
    measured = sorted((report.nodeid, name, value) for outcome in ("passed", "failed")
                      for report in terminalreporter.stats.get(outcome, []) if report.when == "call"
                      for name, value in report.user_properties)
    if measured:
        terminalreporter.write_sep("-", "measured")
        for nodeid, name, value in measured:
            terminalreporter.write_line(f"{nodeid.split('::')[-1]}: {name} {value}")
