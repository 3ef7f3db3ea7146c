"""mprof run as a user meets it: the program's output untouched, its status
its own, and a list of the files the run wrote once it has ended."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from e2e_support import MPROF, REPO_ROOT, Targets
from mprof.reducer import datafile, tree

# Writes to both streams, then allocates in a fork child and in an exec'd
# shell as well.
CHATTY = "echo to stdout; echo to stderr >&2; (echo child) ; /bin/sh -c 'echo grandchild >&2'"


def mprof_run(*arguments: str | Path, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MPROF), "run", *map(str, arguments)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def listing(stderr: str) -> set[Path]:
    """The paths of 'mprof: the run wrote N data files:' and its lines."""
    return {Path(match) for match in re.findall(r"^  (/\S+) \(pid \d+", stderr, re.MULTILINE)}


def test_the_programs_output_is_its_own(tmp_path: Path) -> None:
    plain = subprocess.run(["/bin/sh", "-c", CHATTY], cwd=tmp_path, capture_output=True, text=True, check=True)
    quiet = mprof_run("--quiet", "-o", "chatty.mprof", "/bin/sh", "-c", CHATTY, cwd=tmp_path)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, plain.stdout, plain.stderr)
    listed = mprof_run("-o", "listed.mprof", "/bin/sh", "-c", CHATTY, cwd=tmp_path)
    # The list comes from mprof run once the program has ended: after all
    # of the program's own output.
    assert listed.stdout == plain.stdout
    assert listed.stderr.startswith(plain.stderr + "mprof: the run wrote ")


def test_the_list_names_every_file_of_the_run(targets: Targets, tmp_path: Path) -> None:
    leaf = targets.build("leaf")
    completed = mprof_run("-o", "fe.mprof", targets.build("forkexec"), leaf, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    written = set(tmp_path.glob("fe.mprof*"))
    assert len(written) == 4  # the parent, two fork children, the exec'd leaf
    assert listing(completed.stderr) == written
    assert "mprof: the run wrote 4 data files:\n" in completed.stderr
    assert f"(pid {datafile.read(tmp_path / 'fe.mprof').header.pid}, {targets.build('forkexec')})" in completed.stderr


def test_a_process_that_left_no_file_is_named(targets: Targets, tmp_path: Path) -> None:
    program = targets.build("endings")
    completed = mprof_run("-o", "gone.mprof", program, "exit_group", cwd=tmp_path)
    assert completed.returncode == 6
    [warning] = [line for line in completed.stderr.splitlines() if "warning" in line]
    assert re.fullmatch(rf"mprof: warning: pid \d+ \({re.escape(str(program))}\) left no data file", warning)
    assert "mprof: the run wrote no data file" in completed.stderr


@pytest.mark.parametrize(("how", "status"), [("_exit", 3), ("term", -signal.SIGTERM), ("segv", -signal.SIGSEGV),
                                             ("abort", -signal.SIGABRT)])
def test_the_status_is_the_programs(targets: Targets, tmp_path: Path, how: str, status: int) -> None:
    program = targets.build("endings")
    plain = subprocess.run([program, how], cwd=tmp_path, capture_output=True, timeout=60)
    completed = mprof_run("-o", "status.mprof", program, how, cwd=tmp_path)
    assert completed.returncode == plain.returncode == status
    assert listing(completed.stderr) == {tmp_path / "status.mprof"}


def test_a_signal_sent_to_mprof_run_reaches_the_program(targets: Targets, tmp_path: Path) -> None:
    process = subprocess.Popen([str(MPROF), "run", "-o", "slept.mprof", targets.build("sleeper")], cwd=tmp_path,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        process.send_signal(signal.SIGTERM)
        # stdin stays open until the program has ended: at its end of file
        # it would go on to allocate more before the forwarded signal came.
        process.wait(timeout=60)
        assert process.stderr is not None
        stderr = process.stderr.read()
    finally:
        process.kill()
    assert process.returncode == -signal.SIGTERM
    data = datafile.read(tmp_path / "slept.mprof")
    assert data.header.end_signal == signal.SIGTERM
    assert [(b.size, b.allocs) for b in data.bins if b.size == 55] == [(55, 1000)]
    assert listing(stderr) == {tmp_path / "slept.mprof"}


def test_the_dump_signal_is_passed_on(targets: Targets, tmp_path: Path) -> None:
    process = subprocess.Popen([str(MPROF), "run", "--dump-signal", "URG", "-o", "d.mprof",
                                targets.build("sleeper")], cwd=tmp_path, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdin is not None
        assert process.stdout.readline() == "ready\n"
        process.send_signal(signal.SIGURG)  # to mprof run, which passes it on
        deadline = time.monotonic() + 20
        while not (tmp_path / "d.mprof.snap1").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        _, stderr = process.communicate("\n", timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0
    assert listing(stderr) == {tmp_path / "d.mprof", tmp_path / "d.mprof.snap1"}
    assert "d.mprof.snap1 (pid" in stderr and ", a snapshot)" in stderr


def test_a_relative_output_is_where_mprof_run_started(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # dash allocates, changes directory, allocates again and ends.
    command = f"cd {elsewhere} && echo $(pwd) >/dev/null"
    completed = mprof_run("-o", "rel.mprof", "/bin/sh", "-c", command, cwd=tmp_path)
    assert completed.returncode == 0
    assert (tmp_path / "rel.mprof").is_file() and not list(elsewhere.iterdir())
    # The monitor alone, preloaded without mprof run, does the same.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    env.update(LD_PRELOAD=str(Path(MPROF).parent / "build" / "libmprof.so"), MPROF_OUTPUT="bare.mprof")
    subprocess.run(["/bin/sh", "-c", command], cwd=tmp_path, env=env, check=True, timeout=60)
    assert (tmp_path / "bare.mprof").is_file() and not list(elsewhere.iterdir())


def test_verbose_brings_back_the_monitors_lines(tmp_path: Path) -> None:
    completed = mprof_run("--verbose", "--quiet", "-o", "v.mprof", "/bin/true", cwd=tmp_path)
    assert completed.stderr == f"mprof: wrote final {tmp_path / 'v.mprof'}\n"


@pytest.mark.parametrize("status", [0, 1, 3, 77])
def test_the_exit_status_passes_through(tmp_path: Path, status: int) -> None:
    completed = mprof_run("--quiet", "-o", "s.mprof", "/bin/sh", "-c", f"exit {status}", cwd=tmp_path)
    assert (completed.returncode, completed.stdout, completed.stderr) == (status, "", "")
    assert datafile.read(tmp_path / "s.mprof").header.final


def test_no_follow_profiles_the_program_alone(targets: Targets, tmp_path: Path) -> None:
    leaf = targets.build("leaf")
    completed = mprof_run("--no-follow", "-o", "alone.mprof", targets.build("forkexec"), leaf, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alone.mprof"]
    assert listing(completed.stderr) == {tmp_path / "alone.mprof"}
    # forkexec.c's parent alone: 10 blocks of 100 bytes (one kept), a block
    # of 111 bytes (freed at the end), then 5 more of 100, all freed.
    data = datafile.read(tmp_path / "alone.mprof")
    assert [(b.size, b.allocs, b.frees) for b in data.bins] == [(100, 15, 14), (111, 1, 1)]
    # Followed, the two children and the leaf write theirs too.
    followed = mprof_run("--quiet", "-o", "all.mprof", targets.build("forkexec"), leaf, cwd=tmp_path)
    assert followed.returncode == 0
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("all.mprof")]) == 4


def test_output_pattern_with_pid_and_percent(tmp_path: Path) -> None:
    completed = mprof_run("--quiet", "-o", "a%%b.%p.mprof", "/bin/true", cwd=tmp_path)
    assert completed.returncode == 0
    [written] = list(tmp_path.iterdir())
    assert re.fullmatch(r"a%b\.\d+\.mprof", written.name), written.name
    assert datafile.read(written).header.pid == int(written.name.split(".")[1])


def test_depth_and_call_graph_flags_reach_the_file(tmp_path: Path) -> None:
    completed = mprof_run("--quiet", "--depth", "7", "--leak-depth", "2", "--no-call-graph", "-o", "f.mprof",
                          "/bin/true", cwd=tmp_path)
    assert completed.returncode == 0
    data = datafile.read(tmp_path / "f.mprof")
    totals = tree.totals(data)
    assert (data.header.stack_depth, data.header.leak_depth, data.header.call_graph, totals.pairs) == (7, 2, False, ())
    assert all(len(chain.addrs) <= 2 for chain in tree.totals(data).leaks)


@pytest.mark.slow
def test_an_inherited_ignored_sigchld(targets: Targets, tmp_path: Path) -> None:
    # mprof run started with SIGCHLD ignored still sees the program end:
    # its status and its file.  (Run without the tree's sh launcher, which
    # dash starts with SIGCHLD back at its default.)
    program = targets.build("handlers")

    def ignore_sigchld() -> None:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)

    plain = subprocess.run([program], capture_output=True, text=True, timeout=60, preexec_fn=ignore_sigchld)
    run = subprocess.run([sys.executable, REPO_ROOT / "src" / "mprof" / "cli" / "entry.py", "run", "--quiet", "-o",
                          "h.mprof", program], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         preexec_fn=ignore_sigchld)
    assert f"signal {int(signal.SIGCHLD)} starts as SIG_IGN" in plain.stdout.splitlines()
    assert (run.returncode, run.stdout, run.stderr) == (plain.returncode, plain.stdout, "")
    assert datafile.read(tmp_path / "h.mprof").header.final


# The monitor's own variables: the preload, and where and how to write.
MONITOR_VARIABLES = ("LD_PRELOAD", "MPROF_OUTPUT", "MPROF_RUN_DIR", "MPROF_ROOT_PID")


@pytest.mark.parametrize("launcher", [MPROF, REPO_ROOT / ".venv" / "bin" / "mprof"], ids=["tree", "console-script"])
@pytest.mark.parametrize("lc_ctype", [None, "C", "POSIX", ""])
def test_the_program_gets_the_environment_it_was_given(tmp_path: Path, lc_ctype: str | None, launcher: Path) -> None:
    # In a C locale, Python (PEP 538) sets LC_CTYPE for itself; the
    # program must not inherit it, whether Python started from the tree's
    # sh launcher or from the venv's console script.
    # PWD as a shell keeps it: the launcher's sh would correct a stale one.
    given = {key: value for key, value in os.environ.items()
             if key not in ("LANG", "LC_ALL", "LC_CTYPE") and not key.startswith("MPROF_")} | {"PWD": str(tmp_path)}
    if lc_ctype is not None:
        given["LC_CTYPE"] = lc_ctype
    plain = subprocess.run(["/usr/bin/env", "-0"], env=given, cwd=tmp_path, capture_output=True, check=True).stdout
    profiled = subprocess.run([launcher, "run", "--quiet", "-o", tmp_path / "env.mprof", "/usr/bin/env", "-0"],
                              env=given, cwd=tmp_path, capture_output=True, check=True).stdout

    def variables(output: bytes) -> dict[bytes, bytes]:
        return dict(entry.split(b"=", 1) for entry in output.split(b"\0") if entry)

    seen = variables(profiled)
    assert sorted(key.decode() for key in seen.keys() - variables(plain).keys()) == sorted(MONITOR_VARIABLES)
    assert {key: value for key, value in seen.items() if key.decode() not in MONITOR_VARIABLES} == variables(plain)


def test_no_leak_check_is_the_monitors_setting(tmp_path: Path) -> None:
    """--no-leak-check asks the monitor, through MPROF_LEAK_CHECK=0 in the
    program's environment, not to classify the live blocks; by default the
    variable is not set."""
    echo = ["/bin/sh", "-c", 'echo "[${MPROF_LEAK_CHECK-unset}]"']
    unchecked = mprof_run("--quiet", "--no-leak-check", "-o", "unchecked.mprof", *echo, cwd=tmp_path)
    assert (unchecked.returncode, unchecked.stdout) == (0, "[0]\n")
    checked = mprof_run("--quiet", "-o", "checked.mprof", *echo, cwd=tmp_path)
    assert (checked.returncode, checked.stdout) == (0, "[unset]\n")
