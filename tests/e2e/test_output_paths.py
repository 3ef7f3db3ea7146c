"""Every command's output file given what is not a regular file (issue 30):
a character device or a FIFO is written through, a socket or a directory is
refused in one line, a symbolic link is followed; and whatever was there is
still there afterwards, the same node.  mknod needs root: the device tests
are skipped otherwise, the rest run always."""

from __future__ import annotations

import os
import socket
import sqlite3
import stat
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from e2e_support import MPROF, mprof

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="making a character device (mknod) needs root")
NULL, FULL = os.makedev(1, 3), os.makedev(1, 7)
SQLITE_MAGIC = b"SQLite format 3\0"
REPLAY = ("replay", "--synthetic", "--operations", "2000", "--repeat", "1", "--allocators", "glibc")


def _html(data: bytes) -> None:
    assert data.startswith(b"<!DOCTYPE html>") and data.endswith(b"</html>"), data[:100]


def _page_of_a_replay(data: bytes) -> None:
    _html(data)
    assert b"Allocators" in data and b"glibc" in data


def _database_of_a_replay(data: bytes, directory: Path) -> None:
    assert data.startswith(SQLITE_MAGIC)
    copy = directory / "received.db"
    copy.write_bytes(data)
    connection = sqlite3.connect(copy)
    try:
        assert connection.execute("SELECT source FROM replays").fetchall() == [
            ("synthetic --operations 2000 --seed 1 --max-size 1000",)]
    finally:
        connection.close()
        copy.unlink()


def functions(database: bytes, directory: Path) -> int:
    copy = directory / "counted.db"
    copy.write_bytes(database)
    connection = sqlite3.connect(copy)
    try:
        count: int = connection.execute("SELECT count(*) FROM functions").fetchone()[0]
        return count
    finally:
        connection.close()
        copy.unlink()


@dataclass(frozen=True)
class Command:
    """One command's output option: its command line writing to OUT, and
    whether two runs write the same bytes (then they are compared with a
    run's into a regular file), else how to tell what it wrote is right."""

    words: Callable[[Path, Path], Sequence[str | Path]]
    same_each_time: bool = True
    valid: Callable[[bytes, Path], None] | None = None
    prints: bool = False
    """Its standard output has words of its own besides the file."""


COMMANDS = {
    "html": Command(lambda data, out: ["html", data, "-o", out]),
    "db": Command(lambda data, out: ["db", data, "-o", out]),
    "export-collapsed": Command(lambda data, out: ["export", "--format", "collapsed", "-o", out, data]),
    "export-pprof": Command(lambda data, out: ["export", "--format", "pprof", "-o", out, data]),
    "diff-html": Command(lambda data, out: ["diff", "--no-pager", data, data, "--html", out], prints=True),
    "replay-db": Command(lambda data, out: [*REPLAY, "--db", out], same_each_time=False,
                         valid=_database_of_a_replay, prints=True),
    "replay-html": Command(lambda data, out: [*REPLAY, "--html", out], same_each_time=False,
                           valid=lambda written, _: _page_of_a_replay(written), prints=True),
}
every_command = pytest.mark.parametrize("name", COMMANDS)


@pytest.fixture(scope="module")
def data(exported_run: Path) -> Path:
    return exported_run


@pytest.fixture(scope="module")
def references(data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """What each command that writes the same bytes each time writes into a
    new regular file."""
    directory = tmp_path_factory.mktemp("references")
    written = {}
    for name, command in COMMANDS.items():
        if command.same_each_time:
            out = directory / name
            mprof(*command.words(data, out))
            written[name] = out.read_bytes()
            assert written[name]
    return written


def run_mprof(words: Sequence[str | Path], directory: Path) -> subprocess.CompletedProcess[bytes]:
    """mprof with its temporary files under directory/tmp, which must be
    empty again afterwards: a write through (to a device) makes the file
    there first."""
    temporaries = directory / "tmp"
    temporaries.mkdir(exist_ok=True)
    completed = subprocess.run([MPROF, *map(str, words)], capture_output=True, timeout=120, cwd=directory,
                               env=dict(os.environ, TMPDIR=str(temporaries)))
    assert list(temporaries.iterdir()) == [], completed.stderr
    return completed


def check_written(name: str, written: bytes, references: dict[str, bytes], directory: Path) -> None:
    command = COMMANDS[name]
    if command.same_each_time:
        assert written == references[name]
    else:
        assert command.valid is not None
        command.valid(written, directory)


def node(path: Path) -> tuple[int, int, int]:
    """What makes a node that node: a replaced one has another inode."""
    found = os.lstat(path)
    return found.st_ino, found.st_mode, found.st_rdev


def assert_ok(completed: subprocess.CompletedProcess[bytes]) -> None:
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == b""


def assert_refused(completed: subprocess.CompletedProcess[bytes], line: str) -> None:
    """Exactly one line on stderr, and nothing done that prints."""
    assert completed.returncode == 1, completed.stderr
    assert completed.stderr.decode() == f"mprof: {line}\n"
    assert completed.stdout == b""


class Drain:
    """A reader of a FIFO on a thread of its own, as a pipe's other end."""

    def __init__(self, fifo: Path) -> None:
        self.fifo = fifo
        self.data = b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.fifo, "rb") as file:
            self.data = file.read()

    def received(self) -> bytes:
        """What came through; a reader that no writer came to is ended by
        a writer of ours that writes nothing."""
        for _ in range(200):
            if not self.thread.is_alive():
                break
            try:
                os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass  # the reader has not opened it yet
            self.thread.join(0.05)
        assert not self.thread.is_alive()
        return self.data


@pytest.fixture
def bound_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "out.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    try:
        yield path
    finally:
        listener.close()


def directory_with_a_file(tmp_path: Path) -> Path:
    directory = tmp_path / "out.d"
    directory.mkdir()
    (directory / "kept").write_bytes(b"kept\n")
    return directory


def assert_directory_kept(directory: Path) -> None:
    assert stat.S_ISDIR(os.lstat(directory).st_mode)
    assert [entry.name for entry in directory.iterdir()] == ["kept"]
    assert (directory / "kept").read_bytes() == b"kept\n"


# ---- The commands' outputs ----

@needs_root
@every_command
def test_a_character_device_is_written_through(name: str, data: Path, tmp_path: Path) -> None:
    device = tmp_path / "out.dev"
    os.mknod(device, stat.S_IFCHR | 0o666, NULL)
    before = node(device)
    completed = run_mprof(COMMANDS[name].words(data, device), tmp_path)
    assert_ok(completed)
    assert node(device) == before and stat.S_ISCHR(before[1]) and before[2] == NULL
    assert sorted(entry.name for entry in tmp_path.iterdir()) == ["out.dev", "tmp"]


@needs_root
@every_command
def test_a_full_device_is_one_line(name: str, data: Path, tmp_path: Path) -> None:
    device = tmp_path / "out.dev"
    os.mknod(device, stat.S_IFCHR | 0o666, FULL)
    before = node(device)
    completed = run_mprof(COMMANDS[name].words(data, device), tmp_path)
    assert completed.returncode == 1
    assert completed.stderr.decode() == f"mprof: {device}: cannot write: No space left on device\n"
    assert node(device) == before and before[2] == FULL


@pytest.mark.slow
@every_command
def test_a_fifo_is_written_through(name: str, data: Path, references: dict[str, bytes], tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    before = node(fifo)
    drain = Drain(fifo)
    completed = run_mprof(COMMANDS[name].words(data, fifo), tmp_path)
    written = drain.received()
    assert_ok(completed)
    check_written(name, written, references, tmp_path)
    assert node(fifo) == before and stat.S_ISFIFO(before[1])


@every_command
def test_a_socket_is_refused(name: str, data: Path, bound_socket: Path, tmp_path: Path) -> None:
    before = node(bound_socket)
    completed = run_mprof(COMMANDS[name].words(data, bound_socket), tmp_path)
    assert_refused(completed, f"{bound_socket}: is a socket, not a file mprof can write")
    assert node(bound_socket) == before and stat.S_ISSOCK(before[1])


@every_command
def test_a_directory_is_refused(name: str, data: Path, tmp_path: Path) -> None:
    directory = directory_with_a_file(tmp_path)
    before = node(directory)
    completed = run_mprof(COMMANDS[name].words(data, directory), tmp_path)
    assert_refused(completed, f"{directory}: is a directory")
    assert node(directory) == before
    assert_directory_kept(directory)


@pytest.mark.parametrize("name", ["html", "db", "export-collapsed", "export-pprof", "diff-html"])
def test_a_wrong_output_is_refused_before_the_inputs_are_read(name: str, tmp_path: Path) -> None:
    directory = directory_with_a_file(tmp_path)
    completed = run_mprof(COMMANDS[name].words(tmp_path / "missing.mprof", directory), tmp_path)
    assert_refused(completed, f"{directory}: is a directory")


@every_command
def test_a_link_to_a_file_replaces_the_file_not_the_link(name: str, data: Path, references: dict[str, bytes],
                                                        tmp_path: Path) -> None:
    target, link = tmp_path / "target.out", tmp_path / "link.out"
    # replay --db adds to the profile database there.
    target.write_bytes(references["db"] if name == "replay-db" else b"old contents\n")
    target.chmod(0o640)
    link.symlink_to(target.name)
    completed = run_mprof(COMMANDS[name].words(data, link), tmp_path)
    assert_ok(completed)
    assert link.is_symlink() and os.readlink(link) == target.name
    check_written(name, target.read_bytes(), references, tmp_path)
    if name == "replay-db":  # the profile kept, the replay added
        assert functions(target.read_bytes(), tmp_path) == functions(references["db"], tmp_path) > 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the file replaced keeps its permissions
    assert sorted(entry.name for entry in tmp_path.iterdir()) == ["link.out", "target.out", "tmp"]


@every_command
def test_a_link_to_a_device_writes_through(name: str, data: Path, tmp_path: Path) -> None:
    link = tmp_path / "null.out"
    link.symlink_to("/dev/null")
    before = node(Path("/dev/null"))
    completed = run_mprof(COMMANDS[name].words(data, link), tmp_path)
    assert_ok(completed)
    assert link.is_symlink() and os.readlink(link) == "/dev/null"
    assert node(Path("/dev/null")) == before


@pytest.mark.parametrize("name", ["html", "db", "export-collapsed", "export-pprof"])
def test_a_link_to_standard_output_writes_to_it(name: str, data: Path, references: dict[str, bytes],
                                                tmp_path: Path) -> None:
    # /dev/stdout's own kind of link, made here: were it replaced, the
    # machine's would not be.
    link = tmp_path / "stdout.out"
    link.symlink_to("/proc/self/fd/1")
    completed = run_mprof(COMMANDS[name].words(data, link), tmp_path)
    assert_ok(completed)
    assert completed.stdout == references[name]
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"


@pytest.mark.parametrize("name", ["html", "db", "export-collapsed"])
def test_standard_output_into_a_file_opened_to_append_is_appended_to(name: str, data: Path,
                                                                    references: dict[str, bytes],
                                                                    tmp_path: Path) -> None:
    # As `mprof ... -o /dev/stdout >> log`: the log keeps what it held, and
    # the same file, not a new one renamed over it, gets the output.
    log = tmp_path / "log"
    log.write_bytes(b"kept\n")
    before = log.stat().st_ino
    with open(log, "ab") as appended:
        completed = subprocess.run([MPROF, *map(str, COMMANDS[name].words(data, Path("/dev/stdout")))],
                                   stdout=appended, stderr=subprocess.PIPE, timeout=120)
    assert (completed.returncode, completed.stderr) == (0, b"")
    assert log.read_bytes() == b"kept\n" + references[name] and log.stat().st_ino == before


# ---- mprof run -o: a data file goes to a file or nowhere ----

def run_refused(out: Path, tmp_path: Path) -> None:
    """mprof run -o OUT refuses in one line naming it, and the program (which
    would make a marker file) never starts."""
    marker = tmp_path / "marker"
    completed = run_mprof(["run", "-o", out, "--", "touch", marker], tmp_path)
    assert completed.returncode != 0
    lines = completed.stderr.decode(errors="replace").splitlines()
    assert len(lines) == 1 and str(out) in lines[0], completed.stderr
    assert not marker.exists()


@needs_root
def test_run_refuses_a_character_device(tmp_path: Path) -> None:
    device = tmp_path / "out.dev"
    os.mknod(device, stat.S_IFCHR | 0o666, NULL)
    before = node(device)
    run_refused(device, tmp_path)
    assert node(device) == before


def test_run_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    before = node(fifo)
    drain = Drain(fifo)  # so that a wrong mprof does not wait for a reader forever
    run_refused(fifo, tmp_path)
    assert drain.received() == b""
    assert node(fifo) == before


def test_run_refuses_a_socket(bound_socket: Path, tmp_path: Path) -> None:
    before = node(bound_socket)
    run_refused(bound_socket, tmp_path)
    assert node(bound_socket) == before


def test_run_refuses_a_directory(tmp_path: Path) -> None:
    directory = directory_with_a_file(tmp_path)
    before = node(directory)
    run_refused(directory, tmp_path)
    assert node(directory) == before
    assert_directory_kept(directory)
