"""Fixtures that build real programs, run them under the real monitor, and
read the data files they write."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from e2e_support import LIBMPROF, TARGETS, Run, Shared, Targets, monitor_env, mprof


@pytest.fixture(scope="session", autouse=True)
def monitor_built() -> None:
    if not LIBMPROF.is_file():
        pytest.fail(f"{LIBMPROF} is missing: run make first")


@pytest.fixture(scope="session")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Shared:
    """The run's shared directory: under pytest-xdist, beside the workers'
    own temporary directories, which it makes for the run."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return Shared(tmp_path_factory.mktemp("shared"))
    directory = tmp_path_factory.getbasetemp().parent / "shared"
    directory.mkdir(exist_ok=True)
    return Shared(directory)


@pytest.fixture(scope="session")
def targets(shared: Shared) -> Targets:
    return Targets(shared)


@pytest.fixture
def profile(tmp_path: Path) -> Callable[..., Run]:
    """Runs a command with the monitor preloaded; checks its exit status."""

    def run(command: Sequence[str | Path], *, expect_status: int = 0, input: str | None = None,
            name: str = "out.mprof", **settings: str) -> Run:
        output = tmp_path / name
        completed = subprocess.run([str(part) for part in command], env=monitor_env(output, **settings),
                                   cwd=tmp_path, capture_output=True, text=True, input=input, timeout=300)
        assert completed.returncode == expect_status, completed.stderr
        return Run(completed, output)

    return run


@pytest.fixture(scope="session")
def cache_server_program(shared: Shared) -> Path:
    """tests/targets/cache_server.cc built at -O2 as a release is."""
    return shared.made("cache_server-O2/cache_server", lambda output: subprocess.run(
        ["g++", "-O2", "-g", "-o", output, TARGETS / "cache_server.cc"], check=True))


@pytest.fixture(scope="session")
def cache_server_run(shared: Shared, cache_server_program: Path) -> Path:
    """The data file of cache_server at -O2 run under mprof run: the C++
    case of the first screen and of the page, made once for the run."""

    def run(output: Path) -> None:
        completed = mprof("run", "--quiet", "-o", output, cache_server_program)
        assert completed.stdout == "cache 2000 entries, total 12138000\n"

    return shared.made("cache_server-O2/cache_server.mprof", run)



@pytest.fixture(scope="session")
def exported_run(shared: Shared, targets: Targets) -> Path:
    """The data file of tests/targets/exported.c under mprof run, which the
    export and output-path tests read."""
    program = targets.build("exported")
    return shared.made("exported.mprof", lambda output: mprof("run", "--quiet", "-o", output, program))
