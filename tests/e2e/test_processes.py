"""Threads, fork, exec, signals and output files."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import MPROF, Run, Targets, in_module, module_named, monitor_env
from mprof.reducer import datafile, tree
from mprof.reducer.records import DataFile

THREADS = 8


def block_size(thread: int) -> int:
    return 16 * (thread + 1) + 3


def own_sites(data: DataFile, program: Path) -> list:
    module = module_named(data, program)
    return sorted((s for s in tree.totals(data).sites if in_module(s.addr, module)), key=lambda s: s.calls)


@pytest.mark.parametrize(("mode", "kept_in"), [("1", "headers"), ("0", "headers"), ("1", "map")])
def test_threads_lose_and_double_count_nothing(targets: Targets, profile: Callable[..., Run], mode: str,
                                               kept_in: str) -> None:
    program = targets.build("threads")
    for _ in range(3):  # the threads race differently each time; the counts must not
        data = profile([program], MPROF_CALL_GRAPH=mode, MPROF_BLOCKS=kept_in).data()
        array, blocks = own_sites(data, program)
        assert (array.calls, array.frees, sum(array.bytes)) == (THREADS, THREADS, 800 * 36)
        assert blocks.calls == sum((i + 1) * 100 for i in range(THREADS))
        assert blocks.frees == sum((i + 1) * 100 - i for i in range(THREADS))
        # Thread 0's blocks of 19 bytes are in class s, the others' (35 to 131) in m.
        assert blocks.bytes == (100 * 19, sum((i + 1) * 100 * block_size(i) for i in range(1, THREADS)), 0, 0)
        assert blocks.freed == (100 * 19, sum(((i + 1) * 100 - i) * block_size(i) for i in range(1, THREADS)), 0, 0)
        sizes = {b.size: (b.allocs, b.frees) for b in data.bins}
        for i in range(THREADS):
            assert sizes[block_size(i)] == ((i + 1) * 100, (i + 1) * 100 - i)
        if mode == "1":
            into_site = [p for p in tree.totals(data).pairs if p.callee == blocks.addr]
            assert sum(p.calls for p in into_site) == blocks.calls


def test_fork_and_exec_each_write_their_own_file(targets: Targets, profile: Callable[..., Run]) -> None:
    leaf = targets.build("leaf")
    run = profile([targets.build("forkexec"), leaf])
    files = run.files()
    assert not [f for f in files if ".tmp." in f.name]
    by_pid = {datafile.read(f).header.pid: f for f in files}
    parent = datafile.read(run.output)
    children = [datafile.read(f) for f in files if f != run.output]
    # parent: 15 blocks of 100, one of 111; first child: 20 of 200 and the
    # parent's 111 freed; second child: 30 of 300, then the exec'd leaf: 40 of 400.
    assert sorted((d.summary.allocs, d.summary.bytes_allocated) for d in children) == [
        (20, 4000), (30, 9000), (40, 16000)]
    # The parent keeps one block of its first ten.
    assert (parent.summary.allocs, parent.summary.frees, parent.summary.bytes_allocated) == (16, 15, 1611)
    assert not parent.header.forked and by_pid[parent.header.pid] == run.output
    first = next(d for d in children if d.summary.allocs == 20)
    assert first.header.forked and first.summary.inherited_frees == 1 and first.summary.frees == 18
    assert first.header.ppid == parent.header.pid
    second = next(d for d in children if d.summary.allocs == 30)
    exec_image = next(d for d in children if d.summary.allocs == 40)
    assert second.header.pid == exec_image.header.pid
    assert Path(exec_image.program.exe).resolve() == leaf.resolve()
    assert exec_image.summary.frees == 36
    # Names: FILE for the first process, FILE.PID for the others, FILE.PID.1
    # for a second image of the same process: nothing overwritten.
    names = sorted(f.name for f in files)
    first_pid, second_pid = first.header.pid, second.header.pid
    assert names == sorted(["out.mprof", f"out.mprof.{first_pid}", f"out.mprof.{second_pid}",
                            f"out.mprof.{second_pid}.1"])
    for path in files:
        assert path.stat().st_mode & 0o777 == 0o600


def test_not_following_children(targets: Targets, profile: Callable[..., Run]) -> None:
    run = profile([targets.build("forkexec"), targets.build("leaf")], MPROF_FOLLOW="0")
    assert run.files() == [run.output]
    assert run.data().summary.allocs == 16


def test_signal_handlers_that_allocate(targets: Targets, profile: Callable[..., Run]) -> None:
    loops = 300000
    run = profile([targets.build("signals"), str(loops)])
    handler_blocks = int(run.completed.stdout.split()[1])
    assert handler_blocks > 0
    baseline = profile([targets.build("leaf")], name="baseline.mprof").data().summary.untracked_allocs
    s = run.data().summary
    # The handler's blocks are counted as tracked, or as untracked when the
    # signal interrupted the monitor itself; never lost, never twice.
    assert s.allocs + s.untracked_allocs - baseline == loops + handler_blocks
    assert s.allocs == s.frees


def test_deep_stacks_are_cut_at_the_depth_limit(targets: Targets, profile: Callable[..., Run]) -> None:
    program = targets.build("deep")
    cut = profile([program, "100", "200"], MPROF_DEPTH="32").data()
    assert cut.summary.truncated_chains == 200 and cut.header.stack_depth == 32
    # A depth with a 0 in it: every digit is a digit.
    cut = profile([program, "100", "200"], MPROF_DEPTH="30", MPROF_LEAK_DEPTH="10", name="cut30.mprof").data()
    assert (cut.summary.truncated_chains, cut.header.stack_depth, cut.header.leak_depth) == (200, 30, 10)
    whole = profile([program, "100", "200"], name="whole.mprof").data()
    assert whole.summary.truncated_chains == 0
    # descend calls itself from one call site: one pair (site, site) counted
    # once per level per allocation; main's call into descend once.
    recursive = [p for p in tree.totals(whole).pairs if p.caller == p.callee]
    assert [p.calls for p in recursive] == [100 * 200 - 200]
    assert sum(p.bytes[0] for p in recursive) == 16 * (100 * 200 - 200)


@pytest.mark.slow
def test_dump_signal_writes_a_snapshot_file_of_its_own(targets: Targets, tmp_path: Path) -> None:
    output = tmp_path / "sleeper.mprof"
    process = subprocess.Popen([targets.build("sleeper")], env=monitor_env(output, MPROF_DUMP_SIGNAL="USR2"),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    snapshots = [tmp_path / "sleeper.mprof.snap1", tmp_path / "sleeper.mprof.snap2"]
    try:
        assert process.stdout is not None and process.stdin is not None
        assert process.stdout.readline() == "ready\n"
        for snapshot in snapshots:  # each signal a new file: none replaces the last
            process.send_signal(signal.SIGUSR2)
            deadline = time.monotonic() + 20
            while not snapshot.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        process.stdin.write("\n")
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
    for snapshot in snapshots:
        data = datafile.read(snapshot)
        assert not data.header.final and not data.header.checkpoint
        assert [(b.size, b.allocs) for b in data.bins if b.size == 55] == [(55, 1000)]
    final = datafile.read(output)
    assert final.header.final
    assert [(b.size, b.allocs) for b in final.bins if b.size == 55] == [(55, 2000)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sleeper.mprof", "sleeper.mprof.snap1",
                                                          "sleeper.mprof.snap2"]
    text = subprocess.run([MPROF, "report", "--tables", "summary", snapshots[0]], capture_output=True, text=True,
                          check=True).stdout
    assert "(snapshot at " in text and "live at the snapshot" in text and "kept at exit" not in text
    # All three at once, as a glob gives them: the snapshots are left out,
    # or the first thousand blocks would count three times.
    together = subprocess.run([MPROF, "report", "--format", "json", *snapshots, output], capture_output=True,
                              text=True, check=True)
    assert json.loads(together.stdout)["summary"]["allocs"] == final.summary.allocs
    assert together.stderr.splitlines() == [
        f"mprof: warning: {snapshot}: left out: {output} is a later file of the same process (pid {process.pid})"
        for snapshot in snapshots]


def test_output_never_follows_a_symlink(targets: Targets, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    output = tmp_path / "out.mprof"
    output.symlink_to(victim)
    subprocess.run([targets.build("leaf")], env=monitor_env(output), check=True)
    assert victim.read_text() == "precious\n"
    assert not output.is_symlink() and output.stat().st_mode & 0o777 == 0o600
    assert datafile.read(output).summary.allocs == 40


def test_without_rename_noreplace_the_file_is_linked_into_place(targets: Targets, tmp_path: Path) -> None:
    shim = targets.build("no_renameat2.so", source="no_renameat2.c", shared=True)
    # With %p the name is never the root's own to replace, so the monitor
    # names the file without replacing: renameat2, here failing, then link.
    env = monitor_env(tmp_path / "out.%p.mprof")
    env["LD_PRELOAD"] += f":{shim}"
    process = subprocess.Popen([targets.build("leaf")], env=env)
    assert process.wait() == 0
    [path] = tmp_path.iterdir()
    assert path.name == f"out.{process.pid}.mprof"
    assert path.stat().st_mode & 0o777 == 0o600 and path.stat().st_nlink == 1
    assert datafile.read(path).summary.allocs == 40


def test_pid_pattern_and_default_name(targets: Targets, tmp_path: Path) -> None:
    leaf = targets.build("leaf")
    pattern = tmp_path / "leaf.%p.mprof"
    completed = subprocess.Popen([leaf], env=monitor_env(pattern))
    completed.wait()
    assert (tmp_path / f"leaf.{completed.pid}.mprof").is_file()
    env = monitor_env(pattern)
    del env["MPROF_OUTPUT"]
    default = subprocess.Popen([leaf], env=env, cwd=tmp_path)
    default.wait()
    assert datafile.read(tmp_path / f"mprof.out.{default.pid}").summary.allocs == 40


def test_bad_settings_are_kept_out_of_the_program_and_said_by_the_report(targets: Targets, tmp_path: Path) -> None:
    output = tmp_path / "out.mprof"
    completed = subprocess.run([targets.build("leaf")], env=monitor_env(output, MPROF_DEPTH="deep"),
                               capture_output=True, text=True, check=True)
    assert completed.stderr == ""
    data = datafile.read(output)
    assert data.header.stack_depth == 128 and data.program.refused_settings == ("MPROF_DEPTH=deep",)
    report = subprocess.run([MPROF, "report", output], capture_output=True, text=True, check=True)
    assert report.stderr == (f"mprof: warning: {output}: the monitor did not accept MPROF_DEPTH=deep and kept its "
                             f"default\n")
    completed = subprocess.run([targets.build("leaf")], env=monitor_env(output, MPROF_BLOCKS="heap"),
                               capture_output=True, text=True, check=True)
    assert completed.stderr == "" and datafile.read(output).program.refused_settings == ("MPROF_BLOCKS=heap",)
    # The largest values mprof(1) allows are taken; a thousandth more is not.
    refused = ("MPROF_CHECKPOINT_GROWTH=1000000.001", "MPROF_CHECKPOINT_INTERVAL=4000000.001")
    for interval, growth, expected in (("4000000", "1000000", ()), ("4000000.001", "1000000.001", refused)):
        completed = subprocess.run([targets.build("leaf")], capture_output=True, text=True, check=True,
                                   env=monitor_env(output, MPROF_CHECKPOINT_INTERVAL=interval,
                                                   MPROF_CHECKPOINT_GROWTH=growth))
        assert completed.stderr == "" and datafile.read(output).program.refused_settings == expected


def test_unwritable_output_is_one_line_and_the_program_is_unaffected(targets: Targets, tmp_path: Path) -> None:
    output = tmp_path / "missing-directory" / "out.mprof"
    completed = subprocess.run([targets.build("leaf")], env=monitor_env(output), capture_output=True, text=True)
    assert completed.returncode == 0
    assert completed.stderr.startswith(f"mprof: cannot create {output}.tmp.")
    assert completed.stderr.endswith(": No such file or directory\n") and completed.stderr.count("\n") == 1


def test_preload_of_a_program_without_malloc_calls(tmp_path: Path) -> None:
    completed = subprocess.run(["/bin/true"], env=monitor_env(tmp_path / "true.mprof"))
    assert completed.returncode == 0
    written = datafile.read(tmp_path / "true.mprof")
    assert written.header.final and Path(written.program.exe).name == "true"


def test_a_shorter_chain_after_a_deeper_one_in_a_thread(targets: Targets, profile: Callable[..., Run]) -> None:
    # The thread's 40-byte block has a chain of three (worker, start_thread
    # and the clone that started it), shorter than the leak depth of 5 and
    # than the 24-byte block's just before: its leak record holds those
    # three and nothing left over from the deeper one.
    data = profile([targets.build("thread_depths")]).data()
    [deep] = [leak for leak in tree.totals(data).leaks if leak.bytes == 24]
    [shallow] = [leak for leak in tree.totals(data).leaks if leak.bytes == 40]
    assert len(deep.addrs) == 5 and len(shallow.addrs) == 3
    assert shallow.addrs[1] == deep.addrs[4]  # start_thread's return address
