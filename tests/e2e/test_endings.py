"""A file from every way a process ends, and a program that sees nothing of
the monitor: signals, _exit, checkpoints, errno, descriptors, handlers."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from e2e_support import LIBMPROF, MPROF, Run, Targets, in_module, module_named, monitor_env
from mprof.reducer import datafile, tree
from mprof.reducer.records import DataFile
from mprof.reducer.tree import Site

MIB = 1 << 20


def plain_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}


def sites_with(data: DataFile, program: Path, calls: int) -> list[Site]:
    module = module_named(data, program)
    return [s for s in tree.totals(data).sites if in_module(s.addr, module) and s.calls == calls]


def site_with(data: DataFile, program: Path, calls: int) -> Site:
    [site] = sites_with(data, program, calls)
    return site


def assert_kept_by_keep(data: DataFile, program: Path) -> None:
    """keep(): 100 blocks of 64 bytes, 40 of them freed."""
    site = site_with(data, program, 100)
    assert (site.frees, sum(site.bytes), sum(site.freed)) == (40, 6400, 2560)


@pytest.mark.parametrize(("how", "status", "end_signal"), [
    ("segv", -signal.SIGSEGV, signal.SIGSEGV),
    ("abort", -signal.SIGABRT, signal.SIGABRT),
    ("term", -signal.SIGTERM, signal.SIGTERM),
    ("reraise", -signal.SIGSEGV, signal.SIGSEGV),
    ("_exit", 3, 0),
    ("_Exit", 4, 0),
    ("quick_exit", 5, 0),
])
def test_every_ending_leaves_a_complete_file(targets: Targets, profile: Callable[..., Run], how: str, status: int,
                                             end_signal: int) -> None:
    program = targets.build("endings")
    without = subprocess.run([program, how], env=plain_env(), capture_output=True, text=True, timeout=60)
    assert without.returncode == status
    run = profile([program, how], expect_status=status)
    assert run.completed.stdout == without.stdout and run.completed.stderr == without.stderr
    data = run.data()
    assert data.header.final and not data.header.checkpoint and data.header.end_signal == end_signal
    assert_kept_by_keep(data, program)
    if end_signal:
        text = subprocess.run([MPROF, "report", "--tables", "summary", run.output], capture_output=True, text=True,
                              check=True).stdout
        assert f"(ended by {signal.Signals(end_signal).name})" in text and "kept at exit" in text


def test_a_raw_exit_group_leaves_no_file(targets: Targets, profile: Callable[..., Run]) -> None:
    # Below the first checkpoint's 1 MiB, and no exit path to hook.
    run = profile([targets.build("endings"), "exit_group"], expect_status=6)
    assert run.files() == []


def _raw_status(command: Sequence[str | Path], env: dict[str, str], cwd: Path) -> int:
    def allow_core() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    process = subprocess.Popen([str(part) for part in command], env=env, cwd=cwd, preexec_fn=allow_core,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status = os.waitpid(process.pid, 0)
    process.returncode = 0  # reaped here; Popen must not wait again
    return status


@pytest.mark.parametrize("how", ["segv", "abort"])
def test_core_dumps_as_without_the_monitor(targets: Targets, tmp_path: Path, how: str) -> None:
    program = targets.build("endings")
    plain, monitored = tmp_path / "plain", tmp_path / "monitored"
    plain.mkdir()
    monitored.mkdir()
    expected = _raw_status([program, how], plain_env(), plain)
    status = _raw_status([program, how], monitor_env(monitored / "out.mprof"), monitored)
    assert status == expected and os.WIFSIGNALED(status)
    assert os.WCOREDUMP(status) == os.WCOREDUMP(expected)
    if Path("/proc/sys/kernel/core_pattern").read_text().strip() == "core":
        assert (plain / "core").exists() and (monitored / "core").exists()
    assert datafile.read(monitored / "out.mprof").header.end_signal == (signal.SIGSEGV if how == "segv"
                                                                        else signal.SIGABRT)


def wait_for_checkpoint(output: Path, holds: Callable[[DataFile], bool], what: str) -> None:
    """Until the file at output, a checkpoint rewritten as the program runs,
    holds what holds() looks for."""
    deadline = time.monotonic() + 60
    while not (output.exists() and holds(datafile.read(output))):
        assert time.monotonic() < deadline, f"no checkpoint holds {what}"
        time.sleep(0.05)


def _killed_at_peak(program: Path, output: Path, mebibytes: int, holds: Callable[[DataFile], bool] | None = None,
                    **settings: str) -> None:
    """Kills `endings peak MEBIBYTES` once it has printed "peak" and, with
    holds, once a checkpoint holds what holds() looks for: the monitor
    spaces its checkpoints by the time they take to write, so on a loaded
    machine the one that holds the peak can come after the half second
    endings churns before it prints "peak"."""
    process = subprocess.Popen([program, "peak", str(mebibytes)], env=monitor_env(output, **settings),
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "peak\n"
        if holds is not None:
            wait_for_checkpoint(output, holds, "the peak")
        process.kill()
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        process.kill()


@pytest.mark.slow
def test_sigkill_at_the_peak_leaves_the_peak_in_a_checkpoint(targets: Targets, tmp_path: Path) -> None:
    program = targets.build("endings")
    # hold() keeps 64 blocks of 1 MiB; churn() then runs half a second, past
    # the 0.1 s interval, so a checkpoint sees all of them.
    _killed_at_peak(program, tmp_path / "out.mprof", 64, lambda data: bool(sites_with(data, program, 64)),
                    MPROF_CHECKPOINT_INTERVAL="0.1")
    data = datafile.read(tmp_path / "out.mprof")
    assert data.header.checkpoint and not data.header.final and data.header.end_signal == 0
    held = site_with(data, program, 64)
    assert (held.frees, sum(held.bytes)) == (0, 64 * MIB)
    assert data.summary.max_live_bytes >= 64 * MIB
    text = subprocess.run([MPROF, "report", "--tables", "summary,leaks", tmp_path / "out.mprof"],
                          capture_output=True, text=True, check=True).stdout
    assert "the process ended without writing its final file" in text and "live at the checkpoint" in text
    assert f"{64 * MIB:,}" in text and "main > hold" in text


@pytest.mark.slow
def test_a_checkpoint_of_a_running_process_says_it_was_running(targets: Targets, tmp_path: Path) -> None:
    # endings peak churns for ever once it has said "peak": its checkpoints
    # come every 0.1 s, and the process is still there to be seen.
    output = tmp_path / "out.mprof"
    process = subprocess.Popen([targets.build("endings"), "peak", "4"],
                               env=monitor_env(output, MPROF_CHECKPOINT_INTERVAL="0.1"), stdout=subprocess.PIPE,
                               text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "peak\n"
        assert output.exists()
        while_running = subprocess.run([MPROF, "report", "--tables", "summary", output], capture_output=True,
                                       text=True, check=True).stdout
    finally:
        process.kill()
        process.wait(timeout=30)
    after = subprocess.run([MPROF, "report", "--tables", "summary", output], capture_output=True, text=True,
                           check=True).stdout
    running = "into the run, taken while the process was running; it still was when this profile was made)"
    assert running in while_running and "without writing its final file" not in while_running
    assert "the process ended without writing its final file)" in after and running not in after


@pytest.mark.slow
def test_mprof_run_says_a_process_it_left_running_is_still_running(targets: Targets, tmp_path: Path) -> None:
    # The shell starts endings in the background and ends once it has said
    # "peak": mprof run lists the shell's file, and the checkpoint of the
    # process still running, which it then goes on rewriting.
    output, said = tmp_path / "out.mprof", tmp_path / "said"
    script = '"$0" peak 4 > "$1" 2>&1 < /dev/null & while ! grep -q peak "$1" 2>/dev/null; do sleep 0.05; done'
    completed = subprocess.run([MPROF, "run", "-o", output, "--", "sh", "-c", script, targets.build("endings"), said],
                               capture_output=True, text=True, timeout=120,
                               env={**plain_env(), "MPROF_CHECKPOINT_INTERVAL": "0.1"})
    assert completed.returncode == 0, completed.stderr
    running = [line for line in completed.stderr.splitlines() if "a checkpoint" in line]
    try:
        assert len(running) == 1 and running[0].endswith(
            "endings, a checkpoint: it is still running, and rewrites it until it ends)"), completed.stderr
    finally:
        for line in running:
            os.kill(int(line.split("(pid ", 1)[1].split(",", 1)[0]), signal.SIGKILL)


@pytest.mark.slow
def test_checkpoints_follow_new_highs_by_the_growth_margin(targets: Targets, tmp_path: Path) -> None:
    program = targets.build("endings")

    def held(data: DataFile) -> list[Site]:
        program_module = module_named(data, program)
        return [s for s in tree.totals(data).sites if in_module(s.addr, program_module) and sum(s.bytes) % MIB == 0
                and s.frees == 0 and s.calls > 1]

    def by_the_margin(data: DataFile) -> bool:
        # Without the interval only new highs write: the last one written
        # holds h of the 64 blocks, and 1.25 times its high is past 64 MiB,
        # or another checkpoint follows (a high that came too soon after the
        # last write is written a little later, when it may hold all 64).
        return any(52 <= site.calls <= 64 for site in held(data)) and data.summary.max_live_bytes * 1.25 > 64 * MIB

    _killed_at_peak(program, tmp_path / "out.mprof", 64, by_the_margin, MPROF_CHECKPOINT_INTERVAL="0")
    data = datafile.read(tmp_path / "out.mprof")
    [site] = held(data)
    assert data.header.checkpoint and by_the_margin(data)
    assert data.summary.max_live_bytes >= site.calls * MIB


@pytest.mark.slow
@pytest.mark.parametrize(("count", "size"), [(64, MIB), (20_000, 1000)])
def test_sigkill_after_a_burst_leaves_a_checkpoint_near_its_peak(targets: Targets, tmp_path: Path, count: int,
                                                                  size: int) -> None:
    # What precedes an OOM kill: memory grows faster than a checkpoint is
    # written, then not one allocation more (endings sleeps), then SIGKILL.
    # The checkpoint after the first (1 MiB) must still come, holding at
    # least the peak over the default growth factor, 1.25: 52 of the 64
    # blocks of 1 MiB (over 48 MiB), 16,000 of the 20,000 of 1,000 bytes.
    program, output = targets.build("endings"), tmp_path / "out.mprof"
    least = -(-count * 4 // 5)

    def burst_sites(data: DataFile) -> list[Site]:
        module = module_named(data, program)
        return [s for s in tree.totals(data).sites if in_module(s.addr, module) and s.calls >= least]

    process = subprocess.Popen([program, "burst", str(count), str(size)], env=monitor_env(output),
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "held\n"
        wait_for_checkpoint(output, lambda data: bool(burst_sites(data)), "the burst")
        process.kill()
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        process.kill()
    data = datafile.read(output)
    assert data.header.checkpoint and not data.header.final and data.header.end_signal == 0
    [site] = burst_sites(data)
    assert least <= site.calls <= count
    assert (site.frees, sum(site.bytes), sum(site.freed)) == (0, site.calls * size, 0)
    assert data.summary.max_live_bytes >= site.calls * size


@pytest.mark.slow
def test_the_checkpoints_thread_allocates_and_frees_nothing_of_the_programs(targets: Targets,
                                                                             tmp_path: Path) -> None:
    # endings burst: 64 calls of malloc, no free; once a checkpoint holds the
    # burst the monitor's writing thread has ended (the C library frees its
    # buffers as a thread ends), and SIGTERM has the final file written.
    program, output = targets.build("endings"), tmp_path / "out.mprof"
    process = subprocess.Popen([program, "burst", "64", str(MIB)], env=monitor_env(output), stdout=subprocess.PIPE,
                               text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "held\n"
        wait_for_checkpoint(output, lambda data: data.summary.max_live_bytes >= 52 * MIB, "the burst")
        process.terminate()
        assert process.wait(timeout=30) == -signal.SIGTERM
    finally:
        process.kill()
    data = datafile.read(output)
    assert data.header.final and data.header.end_signal == signal.SIGTERM
    calls = {name: data.summary[name] for name in ("malloc_calls", "calloc_calls", "realloc_calls", "free_calls",
                                                     "free_null", "unknown_frees", "allocs", "frees")}
    assert calls == {"malloc_calls": 64, "calloc_calls": 0, "realloc_calls": 0, "free_calls": 0, "free_null": 0,
                     "unknown_frees": 0, "allocs": 64, "frees": 0}
    assert data.summary.max_live_bytes == 64 * MIB


@pytest.mark.slow
def test_fork_children_checkpoint_while_the_parents_checkpoints_are_written(targets: Targets,
                                                                            tmp_path: Path) -> None:
    # endings forks: 20 times the parent grows by a third (a new high: its
    # writing thread is at work) and forks a child that keeps 1 MiB, waits
    # for its own checkpoint and ends with exit_group, leaving only that.
    # A child inherits no thread, and none of its parent's writing.
    program, output = targets.build("endings"), tmp_path / "out.mprof"
    completed = subprocess.run([program, "forks", "20", output], env=monitor_env(output), timeout=300)
    assert completed.returncode == 0
    held = 0
    for _ in range(20):
        held += max(held // 3, 1)
    parent = datafile.read(output)
    assert parent.header.final and not parent.header.forked
    [grown] = sites_with(parent, program, held)
    assert (grown.frees, sum(grown.bytes)) == (0, held * MIB)
    children = sorted(tmp_path.glob("out.mprof.*"))
    assert len(children) == 20
    for path in children:
        child = datafile.read(path)
        assert child.header.checkpoint and child.header.forked and not child.header.final
        # Blocks above 1,024 bytes share the last bin.
        assert [(b.size, b.allocs, b.frees, b.bytes) for b in child.bins] == [(1025, 1, 0, MIB)]
        assert child.summary.max_live_bytes == MIB


@pytest.mark.slow
def test_no_checkpoint_when_both_are_off(targets: Targets, tmp_path: Path) -> None:
    program = targets.build("endings")
    _killed_at_peak(program, tmp_path / "out.mprof", 8, MPROF_CHECKPOINT_INTERVAL="0",
                    MPROF_CHECKPOINT_GROWTH="off")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_programs_own_handlers(targets: Targets, profile: Callable[..., Run]) -> None:
    program = targets.build("handlers")
    without = subprocess.run([program], env=plain_env(), capture_output=True, text=True, timeout=60, check=True)
    run = profile([program])
    assert run.completed.stdout == without.stdout
    # Dispositions the tests inherited (nohup's SIGHUP ignored) come first.
    lines = [line for line in without.stdout.splitlines() if not line.startswith("signal ")]
    assert lines[0] == "SIGSEGV was SIG_DFL" and "recovered from 3 faults, the last at 0x12" in lines
    data = run.data()
    assert data.header.final and data.header.end_signal == 0
    # The three blocks freed around the faults are counted like any other.
    module = module_named(data, program)
    [blocks] = [s for s in tree.totals(data).sites if in_module(s.addr, module) and s.calls == 3]
    assert (blocks.frees, sum(blocks.bytes)) == (3, 16 + 32 + 48)


def test_a_handler_installed_before_the_monitor(targets: Targets, tmp_path: Path) -> None:
    handler = targets.build("libearly_handler.so", source="early_handler.c", shared=True)
    program = targets.build("endings")
    env = monitor_env(tmp_path / "out.mprof")
    # Later in LD_PRELOAD is initialised first: its handler is in place
    # before the monitor's constructor.
    env["LD_PRELOAD"] = f"{LIBMPROF}:{handler}"
    run = subprocess.run([program, "segv"], env=env, capture_output=True, text=True, timeout=60)
    plain = subprocess.run([program, "segv"], env=plain_env() | {"LD_PRELOAD": str(handler)}, capture_output=True,
                           text=True, timeout=60)
    assert (run.returncode, run.stdout) == (plain.returncode, plain.stdout) == (42, "early handler\n")
    data = datafile.read(tmp_path / "out.mprof")
    assert data.header.final and data.header.end_signal == 0  # it ended by _exit, in the handler
    assert_kept_by_keep(data, program)


def test_what_the_program_sees_of_its_allocator(targets: Targets, profile: Callable[..., Run],
                                                tmp_path: Path) -> None:
    program = targets.build("observe")
    without = subprocess.run([program, "20000"], env=plain_env(), capture_output=True, text=True, timeout=60,
                             check=True)
    assert "errno changed 0 times in 20000 rounds" in without.stdout
    assert "descriptors: 0 1 2 3 (4)" in without.stdout and "threads: observe (1)" in without.stdout
    # Checkpoints every millisecond: the monitor opens, writes and renames
    # files while the calls run; then the same into a directory it cannot
    # write, so every one of its system calls fails.
    run = profile([program, "20000"], MPROF_CHECKPOINT_INTERVAL="0.001", MPROF_CHECKPOINT_GROWTH="1.01",
                  MPROF_BLOCKS="map")
    assert without_checkpoint_writer(run.completed.stdout) == without.stdout
    assert run.data().header.final
    # With block headers (the default) a program that reads glibc's chunk
    # header itself finds the monitor's there: the one thing it sees, and
    # only of the blocks of malloc, not of the memalign family.
    lines = without.stdout.splitlines(keepends=True)
    malloc_lines = [line for line in lines if line.startswith("malloc(")]
    assert len(malloc_lines) == 11 and all("usable 1, as glibc's chunk says 1," in line for line in malloc_lines)
    with_headers = "".join(line.replace("chunk says 1", "chunk says 0") if line in malloc_lines else line
                           for line in lines)
    headed = profile([program, "20000"], name="headers.mprof", MPROF_CHECKPOINT_INTERVAL="0.001",
                     MPROF_CHECKPOINT_GROWTH="1.01")
    assert without_checkpoint_writer(headed.completed.stdout) == with_headers
    unwritable = profile([program, "20000"], name="missing/out.mprof", MPROF_CHECKPOINT_INTERVAL="0.001")
    assert without_checkpoint_writer(unwritable.completed.stdout) == with_headers
    dumping = profile([program, "1"], name="dump.mprof", MPROF_DUMP_SIGNAL="USR1")
    # The dump signal is the one case with a thread of the monitor's all
    # along; a checkpoint's lasts while it is written.
    assert dumping.completed.stdout == with_headers.replace("threads: observe (1)", "threads: observe mprof-dump (2)")\
        .replace("errno changed 0 times in 20000 rounds", "errno changed 0 times in 1 rounds")


def without_checkpoint_writer(said: str) -> str:
    """observe's lines with the thread that writes a checkpoint taken out
    of its list of threads, where the listing found one being written
    (mprof(1): WHAT THE PROGRAM CAN SEE): the only thread of the monitor's
    it may see."""
    return re.sub(r"^threads: observe mprof-checkpt \((\d+)\)$",
                  lambda found: f"threads: observe ({int(found[1]) - 1})", said, flags=re.MULTILINE)


@pytest.mark.parametrize("replaced", ["all", "malloc"])
def test_another_allocator_keeps_glibcs_layout(targets: Targets, tmp_path: Path, replaced: str) -> None:
    # The functions after the monitor's are not glibc's own: its blocks get
    # no header, so the program finds glibc's chunk headers where they were.
    program = targets.build("observe")
    flags = ["-DONLY_MALLOC"] if replaced == "malloc" else []
    forwarder = targets.build(f"forwarding_{replaced}.so", *flags, source="forwarding_allocator.c", shared=True)
    without = subprocess.run([program, "2000"], env=plain_env() | {"LD_PRELOAD": str(forwarder)},
                             capture_output=True, text=True, timeout=60, check=True)
    assert "chunk says 0" not in without.stdout
    env = monitor_env(tmp_path / "out.mprof")
    env["LD_PRELOAD"] = f"{env['LD_PRELOAD']}:{forwarder}"
    run = subprocess.run([program, "2000"], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert run.stdout == without.stdout
    summary = datafile.read(tmp_path / "out.mprof").summary
    assert summary.allocs > 2000 and summary.unknown_frees == 0


def test_blocks_reallocated_where_the_monitor_only_forwards(targets: Targets, profile: Callable[..., Run]) -> None:
    # A fork child it does not follow: the monitor forwards without
    # recording, and the parent's blocks keep their header through realloc;
    # realloc to 0 bytes still frees.
    run = profile([targets.build("unfollowed_realloc")], MPROF_FOLLOW="0")
    assert run.completed.stdout == "child reallocs ok\n" and run.completed.stderr == ""
    assert [path.name for path in run.files()] == ["out.mprof"]
    summary = run.data().summary
    assert (summary.allocs, summary.bytes_allocated, summary.frees) == (2, 150, 0)


@pytest.mark.slow
def test_data_files_are_never_written_through_descriptors_0_to_2(targets: Targets, tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    subprocess.run(["strace", "-f", "-o", trace, "-e", "trace=openat,write", targets.build("closed_std")],
                   env=monitor_env(tmp_path / "out.mprof", MPROF_CHECKPOINT_INTERVAL="0.01"), check=True,
                   timeout=120)
    lines = trace.read_text().splitlines()
    # The kernel hands the first checkpoint's file descriptor 0 ...
    assert any(".tmp." in line and line.endswith("= 0") for line in lines)
    # ... and nothing is written through 0, 1 or 2: the file moved above them.
    # (At least that checkpoint and the final file; how many more depends
    # on how busy the machine is.)
    checkpoints = [line for line in lines if " write(" in line]
    assert len(checkpoints) >= 2
    assert not [line for line in checkpoints if line.split(" write(", 1)[1].startswith(("0,", "1,", "2,"))]
    assert datafile.read(tmp_path / "out.mprof").header.final


def test_dump_signal_after_the_program_closed_every_descriptor(targets: Targets, tmp_path: Path) -> None:
    first, second, snapshot = tmp_path / "first", tmp_path / "second", tmp_path / "out.mprof.snap1"
    subprocess.run([targets.build("dump_fds"), first, second, snapshot],
                   env=monitor_env(tmp_path / "out.mprof", MPROF_DUMP_SIGNAL="USR1"), check=True, timeout=60)
    assert first.read_bytes() == second.read_bytes() == b"mine\n"
    assert [(b.size, b.allocs, b.frees) for b in datafile.read(snapshot).bins if b.size == 77] == [(77, 1, 0)]


@pytest.mark.slow
@pytest.mark.parametrize("blocks", ["headers", "map"])
@pytest.mark.parametrize("how", ["free", "realloc"])
def test_frees_in_a_handler_that_interrupted_the_monitor(targets: Targets, profile: Callable[..., Run],
                                                         how: str, blocks: str) -> None:
    program = targets.build("handler_frees")
    run = profile([program, "20000", how], MPROF_BLOCKS=blocks)
    loops, handler_frees = (int(word) for word in run.completed.stdout.split())
    assert handler_frees > 100
    large = site_with(run.data(), program, loops)
    # Each 256 KiB block freed once, by the handler or the main loop.
    assert (large.frees, sum(large.bytes), sum(large.freed)) == (loops, loops * 256 * 1024, loops * 256 * 1024)
    # No free of a block the monitor had not seen: none was lost on the way.
    assert run.data().summary.unknown_frees == 0


def test_a_shell_pipeline_leaves_a_file_per_process(tmp_path: Path) -> None:
    # dash, /bin/sh on Debian, ends with _exit: its own file is the test.
    output = tmp_path / "sh.mprof"
    completed = subprocess.run(["/bin/sh", "-c", "ls / | cat >/dev/null; echo done"], env=monitor_env(output),
                               capture_output=True, text=True, check=True, timeout=60)
    assert completed.stdout == "done\n" and completed.stderr == ""
    files = {path: datafile.read(path) for path in tmp_path.iterdir()}
    programs = sorted(Path(data.program.exe).name for data in files.values() if not data.header.forked)
    assert programs == sorted([Path(os.path.realpath("/bin/sh")).name, "cat", "ls"])
    assert files[output].header.final and files[output].summary.allocs > 0
    assert all(data.header.final for data in files.values())
