"""What every test shares: an environment in which mprof asks no server,
headless Chromium for the pages, the longest modules first, and what tests
measured in the summary."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import address_space
import pytest

# Debian's libdebuginfod-common sets DEBUGINFOD_URLS in login shells, and
# the resolver then asks that server for every module without debug
# information: a test run must not depend on the network.  The tests of
# debuginfod start a server of their own and name it.
os.environ.pop("DEBUGINFOD_URLS", None)

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, driven by its chromedriver (selenium's
    webdriver.Chrome, whose get_log reads the browser's console): one for
    the tests of a process, each of which opens its own page.

    On a machine whose hard address-space limit is below what Chromium
    reserves (tests/address_space.py), no browser can start, Firefox (2 GiB
    for its JIT) and WebKit (4 GiB) no more than Chromium: the page tests
    are skipped there.  Anywhere else, a browser that does not start fails
    them."""
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service

    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.fail("chromium and chromium-driver are missing: run make check, which installs them")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--window-size=1400,1000"):
        options.add_argument(argument)
    with tempfile.TemporaryDirectory(prefix="mprof-chromium-") as profile:
        options.add_argument(f"--user-data-dir={profile}")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        try:
            driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        except WebDriverException:
            address_space.skip_if_too_small(address_space.CHROMIUM_RESERVES, "Chromium")
            raise
        try:
            yield driver
        finally:
            driver.quit()


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
