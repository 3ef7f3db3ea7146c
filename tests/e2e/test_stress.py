"""The monitor under stress (tests/targets/stress.c, exceptions.cc): threads
freeing each other's blocks, fork and signals among busy threads, exit()
from a thread, longjmp and exceptions through allocating frames, a plugin
loaded and unloaded in a loop.  Each under a timeout, with the figures the
programs make by construction."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from e2e_support import MPROF, Targets, in_module, module_named, monitor_env
from mprof.reducer import datafile, tree
from mprof.reducer.records import DataFile
from mprof.reducer.tree import Site

# Well under a minute when all is well; a deadlock fails here, not in CI's
# overall limit.
TIMEOUT = 60


def run(command: list[str | Path], tmp_path: Path, **settings: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    output = tmp_path / "stress.mprof"
    completed = subprocess.run([str(part) for part in command], env=monitor_env(output, **settings), cwd=tmp_path,
                               capture_output=True, text=True, timeout=TIMEOUT)
    assert completed.returncode == 0, completed.stderr
    return completed, output


def attempts(tmp_path: Path, count: int = 3) -> list[Path]:
    """A directory for each of several runs: threads interleave differently each time."""
    directories = [tmp_path / str(attempt) for attempt in range(count)]
    for directory in directories:
        directory.mkdir()
    return directories


def site(data: DataFile, program: Path, calls: int) -> Site:
    module = module_named(data, program)
    [found] = [s for s in tree.totals(data).sites if in_module(s.addr, module) and s.calls == calls]
    return found


def consistent(data: DataFile) -> None:
    """The totals are the sums over the sites, and nothing is negative."""
    assert data.summary.allocs == sum(s.calls for s in tree.totals(data).sites)
    assert data.summary.frees == sum(s.frees for s in tree.totals(data).sites)
    assert all(s.calls >= s.frees and sum(s.bytes) >= sum(s.freed) for s in tree.totals(data).sites)
    assert all(leak.allocs >= leak.frees for leak in tree.totals(data).leaks)


@pytest.mark.parametrize("blocks", ["headers", "map"])
def test_sixteen_threads_free_each_others_blocks(targets: Targets, tmp_path: Path, blocks: str) -> None:
    program = targets.build("stress")
    for directory in attempts(tmp_path):
        _, output = run([program, "threads"], directory, MPROF_BLOCKS=blocks)
        data = datafile.read(output)
        made = site(data, program, 16 * 2000)
        allocated = sum(2000 * 16 * (t + 1) for t in range(16))
        assert (made.frees, sum(made.bytes), sum(made.freed)) == (16 * 2000, allocated, allocated)
        consistent(data)


def test_fork_while_threads_allocate(targets: Targets, tmp_path: Path) -> None:
    program = targets.build("stress")
    _, output = run([program, "fork"], tmp_path)
    parent = datafile.read(output)
    churned = site(parent, program, 4 * 50000)
    assert churned.frees == 4 * 50000
    consistent(parent)
    children = [datafile.read(path) for path in tmp_path.glob("stress.mprof.*")]
    assert len(children) == 20
    for child in children:
        assert child.header.forked and child.header.final and child.summary.inherited_frees == 0
        work = site(child, program, 10)
        assert (work.frees, sum(work.bytes), sum(work.freed)) == (9, 11110, 9999)
        consistent(child)


@pytest.mark.parametrize("blocks", ["headers", "map"])
def test_a_busy_signal_handler_among_busy_threads(targets: Targets, tmp_path: Path, blocks: str) -> None:
    program = targets.build("stress")
    completed, output = run([program, "signals"], tmp_path, MPROF_BLOCKS=blocks)
    handled = int(completed.stdout.split()[1])
    data = datafile.read(output)
    churned = site(data, program, 4 * 50000)
    assert churned.frees == 4 * 50000
    # Each handler run allocated once: counted at its site, or as untracked
    # when it interrupted the monitor; never lost, never twice.
    module = module_named(data, program)
    handler_sites = [s for s in tree.totals(data).sites if in_module(s.addr, module) and sum(s.bytes) == 24 * s.calls
                     and s is not churned]
    in_handler = sum(s.calls for s in handler_sites)
    assert handled > 10 and in_handler <= handled <= in_handler + data.summary.untracked_allocs
    assert all(s.frees == s.calls for s in handler_sites)
    consistent(data)


def test_exit_from_a_thread_while_others_allocate(targets: Targets, tmp_path: Path) -> None:
    program = targets.build("stress")
    for directory in attempts(tmp_path):
        _, output = run([program, "exit"], directory)
        data = datafile.read(output)
        assert data.header.final
        exiting = site(data, program, 50)
        assert (exiting.frees, sum(exiting.bytes)) == (0, 50 * 4242)
        # The churners were still running (on a loaded machine, perhaps not
        # yet started): each holds at most one block.
        module = module_named(data, program)
        churned = [s for s in tree.totals(data).sites if in_module(s.addr, module) and s.addr != exiting.addr]
        assert len(churned) <= 1 and all(0 <= s.calls - s.frees <= 3 for s in churned)
        consistent(data)


def test_longjmp_out_of_deep_recursion(targets: Targets, tmp_path: Path) -> None:
    program = targets.build("stress")
    _, output = run([program, "longjmp"], tmp_path)
    data = datafile.read(output)
    descend = site(data, program, 50 * 100)
    assert (descend.frees, sum(descend.bytes)) == (50 * 100, 50 * 100 * 48)
    # A block at level L (1 to 100) has L - 1 return addresses into descend
    # from descend's own call above its malloc's: L - 2 consecutive pairs of
    # that address with itself.  The previous-chain cache must not carry
    # the pairs of a stack that longjmp dropped.
    [recursive] = [p for p in tree.totals(data).pairs if p.caller == p.callee]
    assert recursive.calls == 50 * sum(level - 2 for level in range(2, 101))
    consistent(data)


def test_cxx_exceptions_through_allocating_frames(targets: Targets, tmp_path: Path) -> None:
    program = targets.build("exceptions")
    completed, output = run([program], tmp_path)
    assert completed.stdout == "caught 100\n"
    data = datafile.read(output)
    level = site(data, program, 100 * 20)
    assert (level.frees, sum(level.bytes), sum(level.freed)) == (2000, 2000 * 40, 2000 * 40)
    assert data.summary.new_calls >= 2000 and data.summary.delete_calls >= 2000
    consistent(data)


def test_plugins_loaded_and_unloaded_in_a_loop(targets: Targets, tmp_path: Path) -> None:
    first = targets.build("libloop_a.so", source="plugin.c", shared=True)
    second = targets.build("libloop_b.so", source="plugin.c", shared=True)
    _, output = run([targets.build("stress", "-ldl"), "dlopen", first, second], tmp_path)
    data = datafile.read(output)
    consistent(data)
    report = json.loads(subprocess.run([MPROF, "report", "--format", "json", output], capture_output=True,
                                       text=True, check=True, timeout=TIMEOUT).stdout)
    # Both files were mapped at the same place in turn; each one's blocks
    # stay its own: 100 of 100 bytes and 100 of 200.
    kept = {}
    for entry in report["call_graph"]:
        if entry["function"] == "plugin_allocate":
            kept[entry["module"]] = kept.get(entry["module"], 0) + entry["self_bytes"]
    assert kept == {str(first): 100 * 100, str(second): 100 * 200}
    assert output.stat().st_size < 200_000
