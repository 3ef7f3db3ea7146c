"""The watch protocol where a mutation audit found it unchecked (make
mutate): how often the monitor's hot path looks for a viewer's request,
at most once a tenth of a second (LOOK_EVERY_NS in monitor/watch.c),
however many calls come, and never at a system call per allocation (seen
with strace, the looks being the fstatat calls on the request's name); and
the descriptors it reads a request through in a program that closed its
standard input, which leave nothing open behind them; and the first place
a process of a user other than root's looks in, the user's runtime
directory."""

from __future__ import annotations

import itertools
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from e2e_support import Targets, monitor_env
from mprof.reducer import datafile

BLOCKS = 20000
SIZE = 64 << 10


@pytest.mark.slow
def test_the_hot_path_looks_for_a_request_at_most_once_a_tenth_of_a_second(targets: Targets,
                                                                          tmp_path: Path) -> None:
    program = targets.build("watch_looks")
    output, trace = tmp_path / "out.mprof", tmp_path / "trace"
    # The monitor's settings for the program alone, not for strace.
    env = monitor_env(output)
    settings = [f"-E{name}={env.pop(name)}" for name in ("LD_PRELOAD", "MPROF_OUTPUT")]
    subprocess.run(["strace", "-f", "-ttt", "-qq", "-o", trace, "-e", "trace=newfstatat,stat,lstat,statx",
                    *settings, program], env=env, check=True, timeout=300)
    summary = datafile.read(output).summary
    assert (summary.allocs, summary.frees, summary.bytes_allocated) == (BLOCKS, BLOCKS, BLOCKS * SIZE)
    # The first of the places a request may be in, looked at first on every
    # look: the user's runtime directory (root's under /run).
    first = "/run/mprof/" if os.geteuid() == 0 else f"/run/user/{os.geteuid()}/"
    looks = [float(line.split()[1]) for line in trace.read_text().splitlines()
             if f'"{first}mprof-watch.' in line]
    assert looks, trace.read_text()[-2000:]
    # The coarse clock the hot path reads moves a few milliseconds at a time.
    gaps = [later - earlier for earlier, later in itertools.pairwise(looks)]
    assert [gap for gap in gaps if gap < 0.05] == [], (len(looks), min(gaps))


# mprof(5): where a process of root's looks first for a request.
ROOT_REQUESTS = Path("/run/mprof")


def wait_for_ready(process: subprocess.Popen[str]) -> None:
    """Waits for dropper's "ready"; the bound only catches a hang."""
    assert process.stdout is not None
    assert select.select([process.stdout], [], [], 60)[0], "dropper never got ready"
    assert process.stdout.readline() == "ready\n"


def wait_for_file(path: Path) -> None:
    """Polls until path exists; the bound only catches a hang."""
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, f"no {path}"
        time.sleep(0.02)


def descriptors_of(pid: int) -> list[str]:
    """What each of a process's open descriptors names now (one closed
    while they are listed is left out)."""
    names = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            names.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            pass
    return names


@pytest.mark.slow
def test_a_request_read_by_a_program_without_stdin_leaves_no_descriptor_open(targets: Targets,
                                                                            tmp_path: Path) -> None:
    """dropper (tests/targets/dropper.c) with its standard input closed, so
    that the monitor's descriptors of the request's directory and of the
    request itself get number 0 as they are opened: they are moved above
    standard error, read through and closed, and the request is answered;
    once the answer is there, no descriptor of the process names the
    request or its directory (one taken for a failure at 0 would stay open
    there for good, the program's next open getting another number)."""
    if os.geteuid() != 0:
        pytest.skip("the request's place here is root's (/run/mprof)")
    program = targets.build("dropper")
    env = monitor_env(tmp_path / "out.mprof", MPROF_CHECKPOINT_GROWTH="off", MPROF_CHECKPOINT_INTERVAL="off")
    process = subprocess.Popen(["sh", "-c", 'exec "$0" plain 0<&-', program], env=env, stdout=subprocess.PIPE,
                               text=True)
    try:
        wait_for_ready(process)
        ROOT_REQUESTS.mkdir(mode=0o700, exist_ok=True)
        request, answer = ROOT_REQUESTS / f"mprof-watch.{process.pid}", tmp_path / "answer.mprof"
        aside = tmp_path / "request"
        aside.write_text(f"{answer}\n")
        os.rename(aside, request)  # whole, as a viewer writes it
        wait_for_file(answer)
        assert not datafile.read(answer).header.final  # a snapshot
        assert [name for name in descriptors_of(process.pid) if name.startswith(str(ROOT_REQUESTS))] == []
    finally:
        process.kill()
        process.communicate()
        (ROOT_REQUESTS / f"mprof-watch.{process.pid}").unlink(missing_ok=True)


# A user with no runtime directory here but the one the test makes, and no
# process of its own.
RUNTIME_USER = 65531


@pytest.mark.slow
def test_a_users_request_in_their_runtime_directory_is_answered(targets: Targets) -> None:
    """mprof(5)'s first place for a process of a user other than root:
    /run/user/UID, the runtime directory a login makes (the user's, 0700).
    dropper (tests/targets/dropper.c) started as that user answers a
    request there, no request being anywhere else."""
    if os.geteuid() != 0:
        pytest.skip("the test makes another user's runtime directory, as root")
    runtime = Path(f"/run/user/{RUNTIME_USER}")
    if not runtime.parent.is_dir():
        pytest.skip("no /run/user here")
    shutil.rmtree(runtime, ignore_errors=True)
    runtime.mkdir(mode=0o700)
    os.chown(runtime, RUNTIME_USER, RUNTIME_USER)
    # Where the user can run dropper and the answer can be written.
    own = Path(tempfile.mkdtemp(prefix="mprof-test-"))
    os.chown(own, RUNTIME_USER, RUNTIME_USER)
    dropper = own / "dropper"
    shutil.copy(targets.build("dropper"), dropper)
    dropper.chmod(0o755)
    process = subprocess.Popen([dropper, "plain"], env=monitor_env(own / "plain.mprof"), cwd=own,
                               stdout=subprocess.PIPE, text=True, user=RUNTIME_USER, group=RUNTIME_USER,
                               extra_groups=[])
    try:
        wait_for_ready(process)
        answer, aside = own / "answer.mprof", runtime / "request"
        aside.write_text(f"{answer}\n")
        os.chown(aside, RUNTIME_USER, RUNTIME_USER)
        os.rename(aside, runtime / f"mprof-watch.{process.pid}")  # whole, as the user's viewer writes it
        wait_for_file(answer)
        assert not datafile.read(answer).header.final  # a snapshot
    finally:
        process.kill()
        process.communicate()
        shutil.rmtree(runtime, ignore_errors=True)
        shutil.rmtree(own, ignore_errors=True)
