"""mprof attach and detach on processes started without mprof: a threaded C
server written for the test (tests/targets/request_server.c), whose every
allocation between two moments is known, and Debian's own python3 serving
files with http.server; each answers correctly before, during and after,
and what it did while attached is in the file, exactly.  And what ends an
attachment besides: an exec, which writes the file first, a second attach,
refused, and Ctrl-C as mprof-inject works, which waits for it.  And what a
detach leaves: every global offset table slot as it was, in a program
built with the PLT and with -fno-plt (tests/targets/routed_calls.cc); and
an event loop whose one thread waits only in epoll
(tests/targets/epoll_server.c), attached and detached."""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from e2e_support import INJECT, INJECT_HELPER, LIBMPROF, MPROF, Targets, ask_line, path_name, signal_receiver
from mprof import leak_kinds
from mprof.cli.inputs import load_profile
from mprof.reducer import datafile
from mprof.report.model import Model, of_kind

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
    line = _first_line(started.stderr.fileno())
    assert line.startswith(f"mprof: attached to process {pid};"), line + started.stderr.read()
    return started


def _first_line(fd: int) -> str:
    """A line read a byte at a time, none past it: communicate(timeout=...)
    reads the pipe itself and never sees what readline would have kept in
    its buffer (a warning printed right after the line, once in four runs)."""
    line = b""
    while not line.endswith(b"\n") and (byte := os.read(fd, 1)):
        line += byte
    return line.decode()


def ended(attached: subprocess.Popen[str]) -> str:
    """What mprof attach said after it attached; it must end with status 0
    (within a bound that only a hang exceeds)."""
    said = attached.communicate(timeout=120)[1]
    assert attached.returncode == 0, said
    return said


def detach_by_command(pid: int, attached: subprocess.Popen[str], output: Path) -> None:
    """mprof detach, which says it detached; the waiting mprof attach then
    ends saying that mprof detach ended it and the file was written."""
    detached = subprocess.run([MPROF, "detach", str(pid)], capture_output=True, text=True, timeout=120)
    assert (detached.returncode, detached.stderr) == (0, f"mprof: detached from process {pid}\n")
    assert ended(attached) == f"mprof: detached from process {pid} (by mprof detach); it wrote {output}\n"


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
    detach_by_command(process.pid, attached, first)
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
    # Classified at the detach, the blocks from before it taken as roots:
    # the sessions the server keeps are still reachable, and the report
    # says what the scan could not tell apart.
    scan = datafile.read(first).leaks
    assert scan is not None and scan.unknown_roots and not scan.threads_unread
    assert scan.threads_stopped >= len(connections)
    assert (f"Leak scan of process {process.pid}: memory of unknown contents (blocks from before the attach) "
            "taken as roots: a block it points to is never called lost") in report.stdout
    sessions = [path for path in model.paths if path_name(model, path).endswith("serve > remember_session")]
    assert sum(of_kind(path, leak_kinds.REACHABLE)[0] for path in sessions) == 100

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
    as they would, and only the process itself has a file.  A vfork
    child's exec, in the process's own memory, leaves its attachment as
    it was: what it allocates after is counted, and mprof detach ends the
    attachment, with no ending signal in the file."""
    program = targets.build("fork_on_request")
    process = subprocess.Popen([program], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_plain_env())
    try:
        assert process.stdin is not None and process.stdout is not None

        def request() -> None:
            process.stdin.write("go\n")
            process.stdin.flush()
            assert process.stdout.readline() == "children 7 0 0\n"

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
    assert [(run.final, run.end_signal) for run in model.runs] == [(True, 0)]


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

    def __init__(self, program: Path, *wrapper: Path) -> None:
        """program, or the wrapper that executes it (wrapper program)."""
        self.process = subprocess.Popen([*wrapper, program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=_plain_env())

    def ask(self, line: str) -> str:
        return ask_line(self.process, line)

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
def test_tables_that_cannot_be_made_writable_are_warned_of_and_the_rest_counted(targets: Targets,
                                                                               tmp_path: Path) -> None:
    """Where mprotect may not make memory writable again (unwritable_tables'
    seccomp filter), the C library's own table of imported functions, in
    its RELRO, cannot be routed: mprof attach says so in a warning, and
    still counts what the program's own calls (its table lazily bound,
    writable) allocate."""
    asker = Asker(targets.build("exec_on_request"), targets.build("unwritable_tables"))
    pid = asker.process.pid
    output = tmp_path / "unwritable.mprof"
    try:
        assert asker.ask("keep 1") == "kept 1"
        attached = attach(pid, output)
        assert asker.ask("keep 2") == "kept 3"
        detached = subprocess.run([MPROF, "detach", str(pid)], capture_output=True, text=True, timeout=120)
        assert (detached.returncode, detached.stderr) == (0, f"mprof: detached from process {pid}\n")
        # Read once it has ended: a warning it did not give is not waited for.
        assert ended(attached) == (
            "mprof: warning: the calls of some of its modules could not be routed to the monitor (their tables "
            "could not be made writable): their allocations are not counted\n"
            f"mprof: detached from process {pid} (by mprof detach); it wrote {output}\n")
    finally:
        asker.end()
    assert by_path(load_profile([output]), "main > keep_block") == (2, 0, 2 * EXEC_BLOCK_SIZE)


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
        detach_by_command(pid, attached, second)
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
        shutil.copyfile(INJECT_HELPER, copy.parent / INJECT_HELPER.name)
        claimed = subprocess.run([INJECT, "--helper", copy.parent / INJECT_HELPER.name, str(pid), copy, "mprof_attach",
                                  str(direct)], capture_output=True, text=True, timeout=120)
        assert (claimed.returncode, claimed.stdout, claimed.stderr) == (0, "1\n", "")
        assert asker.ask("keep 3") == "kept 5"
        detach_by_command(pid, attached, first)
    finally:
        asker.end()
    assert by_path(load_profile([first]), "main > keep_block") == (5, 0, 5 * EXEC_BLOCK_SIZE)
    assert not again.exists() and not direct.exists()


@pytest.mark.slow
def test_a_copy_detached_refuses_to_start_again_and_leaves_the_process_free(targets: Targets,
                                                                            tmp_path: Path) -> None:
    """A copy's monitor runs once: asked to detach again, it says it was
    not attached (1); asked to attach again after its detach, it refuses
    (2: it cannot start), and the refusal holds no claim on the process,
    which mprof attach then attaches as any other."""
    asker = Asker(targets.build("exec_on_request"))
    pid = asker.process.pid
    first, again, third = tmp_path / "first.mprof", tmp_path / "again.mprof", tmp_path / "third.mprof"
    copy = tmp_path / "mprof-attach-direct" / "libmprof.so"
    copy.parent.mkdir()
    shutil.copyfile(LIBMPROF, copy)
    shutil.copyfile(INJECT_HELPER, copy.parent / INJECT_HELPER.name)

    def call(function: str, argument: str, *loaded: str) -> str:
        done = subprocess.run([INJECT, *loaded, "--helper", copy.parent / INJECT_HELPER.name, str(pid), copy, function,
                               argument], capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stderr) == (0, ""), done
        return done.stdout

    try:
        assert asker.ask("keep 1") == "kept 1"  # running its loop, past its start
        assert call("mprof_attach", str(first)) == "0\n"
        assert asker.ask("keep 2") == "kept 3"
        assert call("mprof_detach", "", "--loaded") == "0\n"
        assert call("mprof_detach", "", "--loaded") == "1\n"
        assert call("mprof_attach", str(again), "--loaded") == "2\n"
        assert call("mprof_attached", "", "--loaded") == "0\n"
        attached = attach(pid, third)
        assert asker.ask("keep 3") == "kept 6"
        detach_by_command(pid, attached, third)
    finally:
        asker.end()
    assert by_path(load_profile([first]), "main > keep_block") == (2, 0, 2 * EXEC_BLOCK_SIZE)
    assert by_path(load_profile([third]), "main > keep_block") == (3, 0, 3 * EXEC_BLOCK_SIZE)
    assert not again.exists()


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


# The functions mprof attach routes (mprof(1), mprof attach): the malloc
# family, C++'s new and delete, dlopen and dlclose, pthread_create and the
# exec family.
ROUTED = {"malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign",
          "valloc", "pvalloc", "dlopen", "dlclose", "pthread_create", "execve", "execv", "execvp", "execvpe",
          "fexecve", "execl", "execlp", "execle"}
NEW_OR_DELETE = re.compile(r"_Z(nw|na|dl|da)[mP]")
GOT_TYPES = ("R_X86_64_JUMP_SLOT", "R_X86_64_GLOB_DAT")


def is_routed(symbol: str) -> bool:
    return symbol in ROUTED or NEW_OR_DELETE.match(symbol) is not None


@dataclass(frozen=True)
class Mapping:
    start: int
    end: int
    permissions: str
    offset: int
    path: str


def mappings(pid: int) -> list[Mapping]:
    found = []
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        start, end = (int(half, 16) for half in fields[0].split("-"))
        found.append(Mapping(start, end, fields[1], int(fields[2], 16), fields[5] if len(fields) == 6 else ""))
    return found


@functools.cache
def got_relocations(path: str) -> tuple[int, tuple[tuple[int, str], ...]]:
    """(the first loadable segment's page address, the (offset, symbol) of
    each JUMP_SLOT and GLOB_DAT relocation) of an ELF file, as binutils'
    readelf reads them."""
    segments = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True).stdout
    first = min(int(line.split()[2], 16) for line in segments.splitlines() if line.split()[:1] == ["LOAD"])
    relocations = subprocess.run(["readelf", "-rW", path], capture_output=True, text=True, check=True).stdout
    slots = tuple((int(fields[0], 16), fields[4].split("@")[0])
                  for fields in map(str.split, relocations.splitlines()) if len(fields) > 4 and fields[2] in GOT_TYPES)
    return first & ~(os.sysconf("SC_PAGE_SIZE") - 1), slots


def got_slots(pid: int) -> dict[tuple[str, int], tuple[str, int]]:
    """(module, slot offset): (symbol, what the slot holds) for every JUMP_SLOT
    and GLOB_DAT slot of every ELF file the process maps, read from its
    memory."""
    starts: dict[str, int] = {}
    for mapping in mappings(pid):
        if mapping.offset == 0 and mapping.path.startswith("/") and not mapping.path.endswith(" (deleted)"):
            starts.setdefault(mapping.path, mapping.start)
    slots = {}
    with open(f"/proc/{pid}/mem", "rb") as memory:
        for path, start in starts.items():
            with open(path, "rb") as file:
                if file.read(4) != b"\x7fELF":
                    continue
            first, relocations = got_relocations(path)
            for offset, symbol in relocations:
                memory.seek(start - first + offset)
                slots[(path, offset)] = (symbol, int.from_bytes(memory.read(8), "little"))
    return slots


def is_copy(path: str) -> bool:
    return "/mprof-attach-" in path and Path(path).name == "libmprof.so"


def in_copy(pid: int) -> Callable[[int], bool]:
    """Whether an address lies in a copy of libmprof the process maps."""
    spans = [(mapping.start, mapping.end) for mapping in mappings(pid) if is_copy(mapping.path)]
    assert spans, "no copy of libmprof is loaded"
    return lambda address: any(start <= address < end for start, end in spans)


def module_maps(pid: int, modules: set[str]) -> list[Mapping]:
    return [mapping for mapping in mappings(pid) if mapping.path in modules]


ROUND_C, ROUND_CXX = (7, 7, 1244), (4, 4, 326)  # routed_calls.c's c_calls and cxx_calls
RARE, KEEP, THREAD, PLUGIN = (2, 2, 4196), 1000, (1, 1, 77), 4000


@pytest.mark.slow
@pytest.mark.parametrize("build", ["plt", "no-plt"])
def test_detach_puts_every_routed_slot_back_and_the_attachment_counts_exactly(
        build: str, targets: Targets, tmp_path: Path) -> None:
    """A program whose calls go through the PLT, lazily bound (a slot not
    called yet holds its PLT entry), or, built with -fno-plt, through GOT
    slots alone (GLOB_DAT relocations, in its read-only RELRO segment):
    while attached every slot of a routed function points into the copy of
    libmprof, a library loaded meanwhile too; after the detach every slot
    of every module holds what it held before the attach, each page with
    its protection, and none points into a copy.  What the program did
    meanwhile is in the file, exactly."""
    flags = ["-fno-plt"] if build == "no-plt" else []
    program = targets.build("routed_calls", *flags)
    plugin = targets.build("libplugin.so", source="plugin.c", shared=True)
    own = [(offset, symbol) for offset, symbol in got_relocations(str(program))[1]]
    relocations = subprocess.run(["readelf", "-rW", program], capture_output=True, text=True, check=True).stdout
    jump_slots = [line for line in relocations.splitlines() if "R_X86_64_JUMP_SLOT" in line]
    assert (jump_slots == []) == (build == "no-plt"), relocations
    asker = Asker(program)
    pid = asker.process.pid
    output = tmp_path / f"{build}.mprof"
    rounds, keeps = 20, 3
    try:
        # Every line once, but "rare": the functions they call are bound.
        assert asker.ask("round") == "round 1"
        assert asker.ask("thread") == "joined"
        assert asker.ask("exec-fail") == "failed ENOENT"
        before = got_slots(pid)
        modules = {module for module, _ in before}
        maps_before = module_maps(pid, modules)
        program_spans = [(m.start, m.end) for m in mappings(pid) if m.path == str(program)]
        [valloc_slot] = [slot for slot in own if slot[1] == "valloc"]
        unbound = any(start <= before[(str(program), valloc_slot[0])][1] < end for start, end in program_spans)
        assert unbound == (build == "plt"), "valloc's slot holds its PLT entry until called, with the PLT"

        attached = attach(pid, output)
        routed = in_copy(pid)
        during = got_slots(pid)
        for (module, offset), (symbol, _) in before.items():
            if "/ld-linux" not in module and is_routed(symbol):
                assert routed(during[(module, offset)][1]), (module, symbol)
        for n in range(rounds):
            assert asker.ask("round") == f"round {n + 2}"
        assert asker.ask("rare") == "rare"
        for n in range(keeps):
            assert asker.ask("keep") == f"kept {n + 1}"
        assert asker.ask("thread") == "joined"
        assert asker.ask(f"plugin {plugin}") == "plugged"
        plugin_slots = [value for (module, _), (symbol, value) in got_slots(pid).items()
                        if module == str(plugin) and symbol == "malloc"]
        assert plugin_slots and all(map(routed, plugin_slots))
        detach_by_command(pid, attached, output)

        # Each slot as it was, but those of other functions that the loader
        # bound meanwhile (lazily: from the PLT entry in its own module).
        after = got_slots(pid)
        changed = [(module, symbol) for (module, offset), (symbol, value) in before.items()
                   if after[(module, offset)] != (symbol, value)]
        bound = [(module, symbol) for (module, offset), (symbol, value) in before.items()
                 if after[(module, offset)] != (symbol, value) and not is_routed(symbol)
                 and any(m.start <= value < m.end for m in maps_before if m.path == module)]
        assert changed == bound
        assert module_maps(pid, modules) == maps_before
        assert [(module, symbol) for (module, _), (symbol, value) in after.items()
                if routed(value) and not Path(module).name.startswith("libmprof")] == []
        assert asker.ask("round") == f"round {rounds + 2}"
    finally:
        asker.end()
    model = load_profile([output])
    assert by_path(model, "main > c_calls") == tuple(rounds * figure for figure in ROUND_C)
    assert by_path(model, "main > cxx_calls") == tuple(rounds * figure for figure in ROUND_CXX)
    assert by_path(model, "main > rare_calls") == RARE
    assert by_path(model, "main > keep_block") == (keeps, 0, keeps * KEEP)
    assert by_path(model, "thread_body") == THREAD
    assert by_path(model, "use_plugin > plugin_allocate") == (1, 0, PLUGIN)
    summary = model.summary
    allocs = rounds * (ROUND_C[0] + ROUND_CXX[0]) + RARE[0] + keeps + THREAD[0] + 1
    frees = rounds * (ROUND_C[1] + ROUND_CXX[1]) + RARE[1] + THREAD[1]
    size = rounds * (ROUND_C[2] + ROUND_CXX[2]) + RARE[2] + keeps * KEEP + THREAD[2] + PLUGIN
    assert (summary["allocs"], summary["frees"], summary["bytes_allocated"], summary["unknown_frees"]) == (
        allocs, frees, size, 0)


@pytest.mark.slow
@pytest.mark.parametrize("call", ["epoll_wait", "epoll_pwait", "epoll_pwait2"])
def test_an_event_loop_waiting_only_in_epoll_is_attached_and_detached(call: str, targets: Targets,
                                                                     tmp_path: Path) -> None:
    """A server of one thread, which waits in nothing but the epoll call:
    that thread runs the attach and the detach, and the file holds what
    the loop did in between, exactly."""
    number = {"epoll_wait": 232, "epoll_pwait": 281, "epoll_pwait2": 441}[call]  # x86-64's system call numbers
    served = subprocess.Popen([targets.build("epoll_server"), call], stdout=subprocess.PIPE, text=True,
                              env=_plain_env())
    output = tmp_path / f"{call}.mprof"
    try:
        assert served.stdout is not None
        port = int(served.stdout.readline().split()[1])
        connection = Connection(port)
        works = 0

        def work(count: int) -> None:
            nonlocal works
            for _ in range(count):
                works += 1
                assert connection.ask("work") == f"ok {works}"

        def waits_in_epoll() -> None:
            assert os.listdir(f"/proc/{served.pid}/task") == [str(served.pid)]
            deadline = time.monotonic() + 60
            syscall = Path(f"/proc/{served.pid}/syscall")
            while syscall.read_text().split()[0] != str(number):
                assert time.monotonic() < deadline, syscall.read_text()
                time.sleep(0.01)

        work(10)
        waits_in_epoll()
        attached = attach(served.pid, output)
        work(100)
        for n in range(5):
            assert connection.ask("leak") == f"kept {n + 1}"
        detached = subprocess.run([MPROF, "detach", str(served.pid)], capture_output=True, text=True, timeout=120)
        assert (detached.returncode, detached.stderr) == (0, f"mprof: detached from process {served.pid}\n")
        assert ended(attached) == (f"mprof: detached from process {served.pid} (by mprof detach); "
                                   f"it wrote {output}\n")
        work(10)
        connection.close()
        assert served.poll() is None
    finally:
        served.kill()
        served.wait()
    model = load_profile([output])
    assert by_path(model, "serve_line > make_reply") == (100, 100, 100 * REPLY_SIZE)
    assert by_path(model, "serve_line > remember_session") == (5, 0, 5 * SESSION_SIZE)
    assert (model.summary["allocs"], model.summary["frees"], model.summary["unknown_frees"]) == (105, 100, 0)
