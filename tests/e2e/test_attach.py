"""mprof attach and detach on processes started without mprof: a threaded C
server written for the test (tests/targets/request_server.c), whose every
allocation between two moments is known, and Debian's own python3 serving
files with http.server; each answers correctly before, during and after,
and what it did while attached is in the file, exactly.  And what ends an
attachment besides: an exec, which writes the file first, a second attach,
refused, and Ctrl-C as mprof-inject works, which waits for it."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e_support import BUILD, LIBMPROF, MPROF, Targets, path_name, signal_receiver
from mprof.cli.inputs import load_profile
from mprof.report.model import Model

INJECT, HELPER = BUILD / "mprof-inject", BUILD / "libmprof-inject.so"
REPLY_SIZE, SESSION_SIZE, PLUGIN_BLOCK_SIZE = 256, 1000, 4000  # request_server.c's
# http.server sends a file through shutil.copyfileobj, which reads it 64 KiB
# at a time: a 128 KiB file takes two full reads and one at its end, each
# into a new bytes object of 64 KiB and the 33 bytes of CPython 3.11's
# PyBytesObject in front of them.
BLOB_SIZE, READ_BLOCK, READS_PER_GET = 128 << 10, (64 << 10) + 33, 3


class Connection:
    def __init__(self, port: int) -> None:
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.file = self.socket.makefile("rwb")

    def ask(self, line: str) -> str:
        self.file.write(f"{line}\n".encode())
        self.file.flush()
        return self.file.readline().decode().rstrip("\n")

    def close(self) -> None:
        self.file.close()
        self.socket.close()


@pytest.fixture
def server(targets: Targets) -> Iterator[tuple[subprocess.Popen[str], int]]:
    program = targets.build("request_server")
    started = subprocess.Popen([program], stdout=subprocess.PIPE, text=True, env=_plain_env())
    try:
        assert started.stdout is not None
        port = int(started.stdout.readline().split()[1])
        yield started, port
    finally:
        started.kill()
        started.wait()


def _plain_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}


def attach(pid: int, output: Path, *options: str) -> subprocess.Popen[str]:
    """mprof attach, once it says it has attached."""
    started = subprocess.Popen([MPROF, "attach", str(pid), "-o", str(output), *options], stderr=subprocess.PIPE,
                               text=True, env=_plain_env())
    assert started.stderr is not None
    line = started.stderr.readline()
    assert line.startswith(f"mprof: attached to process {pid};"), line + started.stderr.read()
    return started


def ended(attached: subprocess.Popen[str]) -> str:
    """What mprof attach said after it attached; it must end with status 0
    (within a bound that only a hang exceeds)."""
    said = attached.communicate(timeout=120)[1]
    assert attached.returncode == 0, said
    return said


def by_path(model: Model, ending: str) -> tuple[int, int, int]:
    """(allocations, frees, bytes) of the whole paths ending so."""
    rows = [path for path in model.paths if path_name(model, path).endswith(ending)]
    return sum(row.allocs for row in rows), sum(row.frees for row in rows), sum(sum(row.bytes) for row in rows)


@pytest.mark.slow
def test_a_threaded_server_attached_twice_counts_exactly_what_it_did_meanwhile(
        server: tuple[subprocess.Popen[str], int], targets: Targets, tmp_path: Path) -> None:
    process, port = server
    plugin = targets.build("libplugin.so", source="plugin.c", shared=True)
    connections = [Connection(port) for _ in range(4)]  # a thread each, waiting in read
    works = 0

    def work(count: int) -> None:
        nonlocal works
        for n in range(count):
            works += 1
            assert connections[n % 4].ask("work") == f"ok {works}"

    work(100)
    first = tmp_path / "first.mprof"
    attached = attach(process.pid, first)
    work(10_000)
    for n in range(100):
        assert connections[n % 4].ask("leak") == f"kept {n + 1}"
    detached = subprocess.run([MPROF, "detach", str(process.pid)], capture_output=True, text=True, timeout=60)
    assert (detached.returncode, detached.stderr) == (0, f"mprof: detached from process {process.pid}\n")
    assert ended(attached) == f"mprof: detached from process {process.pid} (by mprof detach); it wrote {first}\n"
    work(100)

    model = load_profile([first])
    assert model.runs[0].attached and model.runs[0].final
    assert by_path(model, "serve > make_reply") == (10_000, 10_000, 10_000 * REPLY_SIZE)
    assert by_path(model, "serve > remember_session") == (100, 0, 100 * SESSION_SIZE)
    summary = model.summary
    assert (summary["allocs"], summary["frees"], summary["unknown_frees"]) == (10_100, 10_000, 0)
    # One reply at a time was live while the works came, then the sessions
    # piled up: the peak since the attach is the hundred sessions.
    assert summary["max_live_bytes"] == 100 * SESSION_SIZE
    report = subprocess.run([MPROF, "report", "--no-pager", first], capture_output=True, text=True, timeout=300)
    assert re.search(r"\n  live at the detach +100 blocks, 100,000 bytes\n", report.stdout), report.stdout
    assert re.search(r"\n  before attaching +0 frees of blocks allocated before mprof attached", report.stdout)

    # Again, to a time limit: the second file holds only what came after it,
    # and the calls of a library loaded meanwhile.
    second = tmp_path / "second.mprof"
    attached = attach(process.pid, second, "--duration", "3")
    work(50)
    for n in range(5):
        assert connections[n % 4].ask("leak") == f"kept {101 + n}"
    for _ in range(2):
        assert connections[0].ask(f"plugin {plugin}") == "plugged"
    assert ended(attached) == f"mprof: detached from process {process.pid}; it wrote {second}\n"
    model = load_profile([second])
    assert by_path(model, "serve > make_reply") == (50, 50, 50 * REPLY_SIZE)
    assert by_path(model, "serve > remember_session") == (5, 0, 5 * SESSION_SIZE)
    assert by_path(model, "serve > use_plugin > plugin_allocate") == (2, 0, 2 * PLUGIN_BLOCK_SIZE)
    work(100)
    assert process.poll() is None
    for connection in connections:
        connection.close()


@pytest.mark.slow
def test_python_http_server_attached_and_detached_by_ctrl_c(tmp_path: Path) -> None:
    """Debian's python3 (built without -fPIE: its PLT entry is malloc's
    address to every lookup) with its allocations through malloc."""
    python = Path("/usr/bin/python3")
    site = tmp_path / "site"
    site.mkdir()
    blob = os.urandom(BLOB_SIZE)
    (site / "blob.bin").write_bytes(blob)
    served = subprocess.Popen([python, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0"], cwd=site,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              env=_plain_env() | {"PYTHONMALLOC": "malloc"})
    try:
        assert served.stdout is not None
        port = int(served.stdout.readline().split(" port ")[1].split()[0])

        def get(count: int) -> None:
            for _ in range(count):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/blob.bin", timeout=30) as response:
                    assert response.read() == blob

        get(5)
        output = tmp_path / "http.mprof"
        attached = attach(served.pid, output)
        get(100)
        attached.send_signal(signal.SIGINT)
        assert ended(attached) == f"mprof: detached from process {served.pid}; it wrote {output}\n"
        get(5)
        assert served.poll() is None
    finally:
        served.kill()
        served.wait()
    model = load_profile([output])
    reads = [path for path in model.paths if sum(path.bytes) == READ_BLOCK * path.allocs
             and "PyBytes_FromStringAndSize" in path_name(model, path)]
    assert (sum(path.allocs for path in reads), sum(path.frees for path in reads)) == (100 * READS_PER_GET,) * 2


def test_an_attached_process_forks_and_executes_as_before(targets: Targets, tmp_path: Path) -> None:
    """Its children run with the routed slots but not recorded: they end
    as they would, and only the process itself has a file."""
    program = targets.build("fork_on_request")
    process = subprocess.Popen([program], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_plain_env())
    try:
        assert process.stdin is not None and process.stdout is not None

        def request() -> None:
            process.stdin.write("go\n")
            process.stdin.flush()
            assert process.stdout.readline() == "children 7 0\n"

        request()
        output = tmp_path / "forks.mprof"
        attached = attach(process.pid, output)
        request()
        request()
        detached = subprocess.run([MPROF, "detach", str(process.pid)], capture_output=True, text=True, timeout=60)
        assert detached.returncode == 0, detached.stderr
        ended(attached)
        request()
    finally:
        process.kill()
        process.wait()
    model = load_profile([output])
    assert (model.summary["allocs"], model.summary["frees"], model.summary["bytes_allocated"]) == (2, 0, 400)
    assert sorted(tmp_path.glob("forks.mprof*")) == [output]


def test_refusals_say_why_in_one_line(server: tuple[subprocess.Popen[str], int], targets: Targets,
                                      tmp_path: Path) -> None:
    process, _ = server
    not_attached = subprocess.run([MPROF, "detach", str(process.pid)], capture_output=True, text=True, timeout=60)
    assert (not_attached.returncode, not_attached.stderr) == (
        1, f"mprof: process {process.pid}: mprof is not attached to it\n")

    # A process has one tracer at a time: ptrace refuses a second.
    tracer = subprocess.Popen(["strace", "-f", "-o", os.devnull, "-p", str(process.pid)],
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while f"TracerPid:\t{tracer.pid}\n" not in Path(f"/proc/{process.pid}/status").read_text():
            assert time.monotonic() < deadline, "strace did not attach"
            time.sleep(0.05)
        refused = subprocess.run([MPROF, "attach", str(process.pid), "-o", str(tmp_path / "x.mprof")],
                                 capture_output=True, text=True, timeout=60)
    finally:
        tracer.terminate()
        tracer.wait()
    assert refused.returncode == 1
    assert refused.stderr == (f"mprof: process {process.pid}: it is traced already, by process {tracer.pid} "
                              "(strace): a process has one tracer at a time; end that one (a debugger, strace) "
                              "first\n")
    assert not (tmp_path / "x.mprof").exists()

    # A process under mprof run has the monitor from its start.
    program = targets.build("request_server")
    run = subprocess.Popen([MPROF, "run", "-o", tmp_path / "run.mprof", "--", program], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, env=_plain_env())
    assert run.stdout is not None
    run.stdout.readline()
    [pid] = (int(child) for child in Path(f"/proc/{run.pid}/task/{run.pid}/children").read_text().split())
    try:
        under_run = subprocess.run([MPROF, "attach", str(pid)], capture_output=True, text=True, timeout=60)
    finally:
        os.kill(pid, signal.SIGKILL)
        run.wait()
    assert under_run.returncode == 1
    assert under_run.stderr.startswith(f"mprof: process {pid}: runs under mprof already")
    assert under_run.stderr.count("\n") == 1


class Asker:
    """tests/targets/exec_on_request.c, a line at a time."""

    def __init__(self, program: Path) -> None:
        self.process = subprocess.Popen([program], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        env=_plain_env())

    def ask(self, line: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().rstrip("\n")

    def end(self) -> None:
        self.process.kill()
        self.process.wait()


EXEC_BLOCK_SIZE = 3000  # exec_on_request.c's


def mprof_libraries(pid: int) -> list[str]:
    """The files of libmprof's copies and mprof-inject's helper that the
    process maps."""
    names = {line.split()[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
             if "libmprof" in line}
    return sorted(names)


@pytest.mark.slow
def test_an_exec_while_attached_ends_the_attachment_with_the_file_written(targets: Targets, tmp_path: Path) -> None:
    """Through each of the exec family a program calls: the file holds what
    it allocated until then, mprof attach ends at once (not after
    --duration), and nothing of mprof is loaded into the new program."""
    program = targets.build("exec_on_request")
    for how in ("execl", "execv", "execvp", "execve"):
        asker = Asker(program)
        pid = asker.process.pid
        output = tmp_path / f"{how}.mprof"
        try:
            assert asker.ask("keep 1") == "kept 1"
            attached = attach(pid, output, "--duration", "600")
            assert asker.ask("keep 3") == "kept 4"
            assert asker.ask(f"exec {how}") == "after"
            assert ended(attached) == (f"mprof: process {pid} executed another program, which ended the "
                                       f"attachment; it wrote {output}\n")
            assert mprof_libraries(pid) == []
            assert asker.ask("still there?") == "after"
        finally:
            asker.end()
        model = load_profile([output])
        assert model.runs[0].attached and model.runs[0].final
        assert by_path(model, "main > keep_block") == (3, 0, 3 * EXEC_BLOCK_SIZE), how
        assert (model.summary["allocs"], model.summary["frees"]) == (3, 0), how


@pytest.mark.slow
def test_an_exec_that_fails_ends_the_attachment_and_another_can_start(targets: Targets, tmp_path: Path) -> None:
    asker = Asker(targets.build("exec_on_request"))
    pid = asker.process.pid
    first, second = tmp_path / "first.mprof", tmp_path / "second.mprof"
    try:
        attached = attach(pid, first)
        assert asker.ask("keep 2") == "kept 2"
        assert asker.ask("exec-fail") == "failed ENOENT"
        assert ended(attached) == (f"mprof: process {pid} called exec, which failed and ended the attachment; "
                                   f"it wrote {first}\n")
        assert asker.ask("keep 1") == "kept 3"  # unprofiled now
        attached = attach(pid, second)
        assert asker.ask("keep 4") == "kept 7"
        detached = subprocess.run([MPROF, "detach", str(pid)], capture_output=True, text=True, timeout=120)
        assert (detached.returncode, detached.stderr) == (0, f"mprof: detached from process {pid}\n")
        assert ended(attached) == f"mprof: detached from process {pid} (by mprof detach); it wrote {second}\n"
    finally:
        asker.end()
    assert by_path(load_profile([first]), "main > keep_block") == (2, 0, 2 * EXEC_BLOCK_SIZE)
    assert by_path(load_profile([second]), "main > keep_block") == (4, 0, 4 * EXEC_BLOCK_SIZE)


@pytest.mark.slow
def test_a_second_attach_is_refused_and_the_first_records_on(targets: Targets, tmp_path: Path) -> None:
    asker = Asker(targets.build("exec_on_request"))
    pid = asker.process.pid
    first, again, direct = tmp_path / "first.mprof", tmp_path / "again.mprof", tmp_path / "direct.mprof"
    try:
        attached = attach(pid, first)
        loaded = mprof_libraries(pid)
        assert [Path(name).name for name in loaded] == ["libmprof-inject.so", "libmprof.so"]
        assert asker.ask("keep 2") == "kept 2"
        refused = subprocess.run([MPROF, "attach", str(pid), "-o", str(again)], capture_output=True, text=True,
                                 timeout=120, env=_plain_env())
        assert (refused.returncode, refused.stderr) == (
            1, f"mprof: process {pid}: mprof is attached to it already; mprof detach {pid} ends that\n")
        assert mprof_libraries(pid) == loaded  # asked, not loaded again
        # Two at once (mprof attach's question passed for both): the monitor
        # of a copy loaded meanwhile refuses too.
        copy = tmp_path / "mprof-attach-direct" / "libmprof.so"
        copy.parent.mkdir()
        shutil.copyfile(LIBMPROF, copy)
        shutil.copyfile(HELPER, copy.parent / HELPER.name)
        claimed = subprocess.run([INJECT, "--helper", copy.parent / HELPER.name, str(pid), copy, "mprof_attach",
                                  str(direct)], capture_output=True, text=True, timeout=120)
        assert (claimed.returncode, claimed.stdout, claimed.stderr) == (0, "1\n", "")
        assert asker.ask("keep 3") == "kept 5"
        detached = subprocess.run([MPROF, "detach", str(pid)], capture_output=True, text=True, timeout=120)
        assert (detached.returncode, detached.stderr) == (0, f"mprof: detached from process {pid}\n")
        assert ended(attached) == f"mprof: detached from process {pid} (by mprof detach); it wrote {first}\n"
    finally:
        asker.end()
    assert by_path(load_profile([first]), "main > keep_block") == (5, 0, 5 * EXEC_BLOCK_SIZE)
    assert not again.exists() and not direct.exists()


@pytest.mark.slow
def test_ctrl_c_while_mprof_inject_works_waits_for_it_then_detaches(targets: Targets, tmp_path: Path) -> None:
    """The terminal's Ctrl-C reaches mprof attach's whole process group;
    here twice while mprof-inject has a thread of the process in its call
    (the library it loads waits for the loader's lock, which the process
    holds until the Ctrl-Cs were sent), in a process that takes a POSIX
    timer's signals and queued ones all along: the attach ends, then the
    detach, and the process goes on with every signal as it was sent."""
    for n in range(3):
        release, released = os.pipe()
        try:
            with signal_receiver(targets, env=_plain_env(), pass_fds=(release,)) as receiver:
                os.close(release)
                assert receiver.ask(f"hold {release}") == "holding"
                output = tmp_path / f"{n}.mprof"
                attaching = subprocess.Popen([MPROF, "attach", str(receiver.pid), "-o", str(output)],
                                             stderr=subprocess.PIPE, text=True, env=_plain_env(),
                                             start_new_session=True)
                status = Path(f"/proc/{receiver.pid}/status")
                deadline = time.monotonic() + 60
                while "TracerPid:\t0\n" in status.read_text():
                    assert attaching.poll() is None and time.monotonic() < deadline, "mprof-inject never came"
                os.killpg(attaching.pid, signal.SIGINT)
                os.killpg(attaching.pid, signal.SIGINT)
                assert not any(Path(name).name == "libmprof.so" for name in mprof_libraries(receiver.pid)), \
                    "the library was loaded before the Ctrl-Cs: they did not come while mprof-inject worked"
                os.write(released, b"x")
                said = attaching.communicate(timeout=120)[1]
                assert (attaching.returncode, said) == (0, (
                    f"mprof: attached to process {receiver.pid}; Ctrl-C or mprof detach {receiver.pid} ends it\n"
                    f"mprof: detached from process {receiver.pid}; it wrote {output}\n")), n
                receiver.runs_as_before(f"round {n}")
                receiver.finish()
        finally:
            os.close(released)
        run = load_profile([output]).runs[0]
        assert run.attached and run.final


def test_a_helper_is_taken_only_from_a_copy_directory_no_other_user_can_change(tmp_path: Path) -> None:
    """mprof-inject loads the helper beside a copy into itself and into the
    process: from a directory of /tmp that another user made again after
    mprof attach removed it, or that others may write, it takes its own."""
    from mprof.attach import inject

    directory = tmp_path / "mprof-attach-x"
    directory.mkdir(mode=0o755)
    (directory / "libmprof-inject.so").write_bytes(b"")
    assert inject.own_directory(directory)
    directory.chmod(0o777)
    assert not inject.own_directory(directory)
    directory.chmod(0o755)
    os.chown(directory / "libmprof-inject.so", 65534, 65534)
    assert not inject.own_directory(directory)
    os.chown(directory / "libmprof-inject.so", os.geteuid(), os.getegid())
    os.chown(directory, 65534, 65534)
    assert not inject.own_directory(directory)
    # Nor is a mark made through a link planted there.
    os.chown(directory, os.geteuid(), os.getegid())
    elsewhere = tmp_path / "elsewhere"
    (directory / "detaching").symlink_to(elsewhere)
    assert inject.mark_detaching(directory / "libmprof.so") is None
    assert not elsewhere.exists()
