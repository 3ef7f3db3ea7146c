"""Inputs that are not what they claim, given to every command that reads
one: /dev/zero, /dev/urandom and a 10 GB sparse file (zeros) each get one
line naming the file and a non-zero exit, within seconds and a few MB,
however much the file has or claims; a stream is judged as it comes.
SIGTERM to mprof replay cleans up as SIGINT does; a binary suppressions
file's line is shown escaped once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from e2e_support import BUILD, MPROF, monitor_env
from mprof.reducer.errors import MprofError
from mprof.report import suppressions

# A bound on the address space of the command and what it runs: the
# readers that read a whole stream before judging it took all of it.
ADDRESS_SPACE = 512 << 20
# Bounds on a shared, noisy machine; the figures measured here were about
# 0.1 s and 20 MB (a Python interpreter with mprof's modules loaded).
MAX_SECONDS = 10
MAX_RSS_MB = 100
SPARSE_SIZE = 10 << 30


@dataclass
class Answer:
    status: int
    stdout: str
    stderr: str
    seconds: float
    max_rss_mb: float


# The command is started from a small python3 of its own, which waits for
# it and writes its exit status and peak resident set to a pipe: Linux
# carries a process's peak across fork and exec, so a command started
# straight from pytest, big by the time this runs, would count pytest's.
MEASURER = r"""
import os, resource, signal, sys
limit, report = int(sys.argv[1]), int(sys.argv[2])
pid = os.fork()
if pid == 0:
    os.close(report)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # as a shell leaves it
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        os.execv(sys.argv[3], sys.argv[3:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(report, f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}".encode())
"""


def answer(arguments: Sequence[str | Path], stdin: int | None = None) -> Answer:
    """mprof run as a user runs it, under ADDRESS_SPACE; its wall time and
    its largest resident size (or a child's: mprof-replay's), from wait4."""
    started = time.monotonic()
    reader, writer = os.pipe()
    process = subprocess.Popen([sys.executable, "-c", MEASURER, str(ADDRESS_SPACE), str(writer), str(MPROF),
                                *map(str, arguments)], stdin=subprocess.DEVNULL if stdin is None else stdin,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(writer,),
                               start_new_session=True)
    os.close(writer)
    out, err = process.stdout, process.stderr
    assert out is not None and err is not None
    watchdog = threading.Timer(MAX_SECONDS * 6, os.killpg, (process.pid, signal.SIGKILL))
    watchdog.start()
    stdout: list[bytes] = []
    reading = threading.Thread(target=lambda: stdout.append(out.read()))
    reading.start()
    stderr = err.read()
    reading.join()
    process.wait()
    watchdog.cancel()
    with os.fdopen(reader, "rb") as report:
        status, max_rss_kb = map(int, report.read().split())
    out.close()
    err.close()
    return Answer(status, stdout[0].decode(errors="replace"), stderr.decode(errors="replace"),
                  time.monotonic() - started, max_rss_kb / 1024)


@pytest.fixture(scope="module")
def valid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real data file, its trace beside it (.trace)."""
    directory = tmp_path_factory.mktemp("valid")
    output = directory / "widgets.mprof"
    subprocess.run([str(BUILD / "widgets"), "300"], env=monitor_env(output, MPROF_TRACE=f"{output}.trace"),
                   check=True, capture_output=True, timeout=60)
    return output


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sparse") / "sparse.mprof"
    with open(path, "wb") as file:
        file.truncate(SPARSE_SIZE)
    return path


HOSTILE = ["/dev/zero", "/dev/urandom", "sparse"]
COMMANDS = {
    "report": lambda bad, valid, out: ["report", "--no-pager", bad],
    "html": lambda bad, valid, out: ["html", bad, "-o", out / "page.html"],
    "db": lambda bad, valid, out: ["db", bad, "-o", out / "profile.db"],
    "dump": lambda bad, valid, out: ["dump", bad],
    "export": lambda bad, valid, out: ["export", "--format", "collapsed", bad, "-o", out / "stacks.txt"],
    "diff base": lambda bad, valid, out: ["diff", "--no-pager", bad, valid],
    "diff new": lambda bad, valid, out: ["diff", "--no-pager", valid, bad],
    "suppressions": lambda bad, valid, out: ["report", "--no-pager", "--suppressions", bad, valid],
    "replay": lambda bad, valid, out: ["replay", "--allocators", "glibc", bad],
}


def one_line_naming(result: Answer, name: str) -> None:
    lines = result.stderr.splitlines()
    assert result.status not in (0, None), result
    assert len(lines) == 1 and lines[0].startswith("mprof: ") and name in lines[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_input_gets_one_line_at_once(command: str, hostile: str, valid: Path, sparse: Path,
                                              tmp_path: Path) -> None:
    bad = str(sparse) if hostile == "sparse" else hostile
    result = answer(COMMANDS[command](bad, valid, tmp_path))
    print(f"{command} {hostile}: {result.seconds:.2f} s, {result.max_rss_mb:.0f} MB, {result.stderr.strip()[:120]}")
    one_line_naming(result, bad)
    assert result.seconds < MAX_SECONDS
    assert result.max_rss_mb < MAX_RSS_MB
    # Nothing written where the command failed.
    assert not [path.name for path in tmp_path.iterdir()]


def uncompressed(data: bytes) -> bytes:
    """A compressed data file as the monitor would write it without
    compression (mprof(5)): header flag 16 clear, the sections inflated,
    END's CRC made for the header it now has."""
    assert data[12] & 0x10, "the monitor always compresses"
    plain = bytearray(data[:64] + zlib.decompress(data[64:]))
    plain[12] &= ~0x10
    end = len(plain) - 24
    assert plain[end:end + 4] == b"END "
    plain[end + 16:end + 20] = zlib.crc32(plain[:end]).to_bytes(4, "little")
    return bytes(plain)


@pytest.mark.parametrize("compressed, cut, problem", [
    # A sound header, then zeros.
    (False, 64, "corrupt: expected section PROG, found 0x00000000"),
    (True, 64, "corrupt: the compressed sections are damaged (unknown compression method), in section PROG"),
    # A whole file, then zeros.
    (False, None, "corrupt: more than 16777216 bytes after section END"),
    (True, None, "corrupt: more than 16777216 bytes after the compressed sections"),
])
def test_a_stream_is_judged_as_it_comes(valid: Path, compressed: bool, cut: int | None, problem: str) -> None:
    data = valid.read_bytes() if compressed else uncompressed(valid.read_bytes())
    head = data[:cut] if cut else data
    reader, writer = os.pipe()
    feeder = subprocess.Popen(["sh", "-c", "cat; exec cat /dev/zero"], stdin=subprocess.PIPE, stdout=writer,
                              stderr=subprocess.DEVNULL)
    os.close(writer)
    try:
        assert feeder.stdin is not None
        feeder.stdin.write(head)
        feeder.stdin.close()
        result = answer(["report", "--no-pager", "/dev/stdin"], stdin=reader)
    finally:
        os.close(reader)
        feeder.kill()
        feeder.wait()
    assert result.stderr == f"mprof: /dev/stdin: {problem}\n"
    assert result.status == 1 and result.seconds < MAX_SECONDS and result.max_rss_mb < MAX_RSS_MB


@pytest.mark.parametrize("compressed", [False, True])
def test_a_section_longer_than_a_regular_file_is_refused_before_it_is_read(valid: Path, tmp_path: Path,
                                                                           compressed: bool) -> None:
    """A sound header, then a first section (PROG) that claims a terabyte
    (compressed: a petabyte, past the 1032 bytes deflate may make of each
    byte), in a 10 GB sparse file: the file's size says no at once."""
    data = valid.read_bytes() if compressed else uncompressed(valid.read_bytes())
    claim = 1 << (50 if compressed else 40)
    section = b"PROG" + bytes(4) + claim.to_bytes(8, "little")
    claimed = tmp_path / "claims.mprof"
    with open(claimed, "wb") as file:
        file.write(data[:64] + (zlib.compress(section) if compressed else section))
        file.truncate(SPARSE_SIZE)
    result = answer(["report", "--no-pager", claimed])
    assert result.stderr == f"mprof: {claimed}: truncated: section PROG needs {claim} bytes, " + (
        f"more than {SPARSE_SIZE - 64} bytes of compressed sections hold\n" if compressed
        else f"{SPARSE_SIZE - 64 - 16} remain\n")
    assert result.seconds < MAX_SECONDS and result.max_rss_mb < MAX_RSS_MB


def test_the_bounds_of_a_suppressions_file_are_those_of_the_manual(tmp_path: Path) -> None:
    """mprof(1): a line of at most 64 KiB before its newline, a file of at
    most 1 MiB; a byte more is refused in one line."""
    path = tmp_path / "bounds.supp"

    def refusal(data: bytes) -> str | None:
        path.write_bytes(data)
        try:
            suppressions.read([path])
        except MprofError as error:
            return str(error)
        return None

    line = b"leak:" + b"x" * ((64 << 10) - 5)
    assert refusal(line + b"\n") is None and refusal(b"# first\n" + line) is None
    too_long = refusal(b"# first\n" + line + b"x\n")
    assert too_long == f"{path}:2: not a suppressions file: a line of more than 65,536 bytes"
    comment = b"#" + b"-" * 1022 + b"\n"
    assert refusal(comment * 1024) is None
    assert refusal(comment * 1024 + b"\n") == f"{path}: not a suppressions file: more than 1,048,576 bytes"


def test_a_database_through_a_pipe_is_read_as_far_as_its_header_says(valid: Path, tmp_path: Path) -> None:
    database = tmp_path / "profile.db"
    subprocess.run([MPROF, "db", valid, "-o", database], check=True, capture_output=True, timeout=60)
    with open(database, "rb") as file:
        # The database, then endless zeros: SQLite's in-header size ends it.
        feeder = subprocess.Popen(["sh", "-c", "cat; exec cat /dev/zero"], stdin=file, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        assert feeder.stdout is not None
        try:
            result = answer(["report", "--no-pager", "/dev/stdin"], stdin=feeder.stdout.fileno())
        finally:
            feeder.kill()
            feeder.wait()
    assert result.status == 0, result.stderr
    assert "Memory leak table" in result.stdout
    assert result.seconds < MAX_SECONDS and result.max_rss_mb < MAX_RSS_MB


@pytest.mark.slow
def test_a_binary_suppressions_file_is_shown_escaped_once(valid: Path, tmp_path: Path) -> None:
    binary = tmp_path / "binary.supp"
    binary.write_bytes(b"\x0e\x01\xffabc\\\x7f\n")
    result = answer(["report", "--no-pager", "--suppressions", binary, valid])
    assert result.status == 1
    assert result.stderr == f"mprof: {binary}:1: not a suppression (TYPE:PATTERN): '\\x0e\\x01\\xffabc\\\\\\x7f'\n"
    with_nul = tmp_path / "nul.supp"
    with_nul.write_bytes(b"leak:libfoo.so\n\0\0\0\n")
    result = answer(["report", "--no-pager", "--suppressions", with_nul, valid])
    assert result.stderr == f"mprof: {with_nul}:2: not a suppressions file: a NUL byte\n"


@pytest.mark.slow
@pytest.mark.parametrize("ending, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_to_replay_leaves_no_temporary_folder(tmp_path: Path, ending: signal.Signals, status: int) -> None:
    output = tmp_path / "busy.mprof"
    subprocess.run([str(BUILD / "widgets"), "200000"], env=monitor_env(output, MPROF_TRACE=f"{output}.trace"),
                   check=True, capture_output=True, timeout=120)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    process = subprocess.Popen([MPROF, "replay", "--allocators", "glibc", "--repeat", "50", f"{output}.trace"],
                               env={**os.environ, "TMPDIR": str(temporary)}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        # Until the trace is prepared and the replays are under way.
        deadline = time.monotonic() + 60
        while not list(temporary.glob("*/trace.prepared")) and process.poll() is None:
            assert time.monotonic() < deadline, "no prepared trace in 60 s"
            time.sleep(0.01)
        time.sleep(0.2)
        assert process.poll() is None, process.communicate()
        process.send_signal(ending)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == status, stderr
    assert "Traceback" not in stderr and stdout == ""
    assert not list(temporary.iterdir())


@pytest.mark.slow
def test_a_database_whose_name_holds_uri_characters_is_read_as_named(valid: Path, tmp_path: Path) -> None:
    # SQLite is given a URI: ?, # and % in a name must stay part of it.
    database = tmp_path / "a?b#c%41.db"
    assert answer(["db", "-o", database, valid]).status == 0
    for command in (["report"], ["export", "--format", "collapsed", "-o", tmp_path / "stacks"]):
        result = answer([*command, database])
        assert (result.status, result.stderr) == (0, "")
    assert answer(["report", valid]).stdout == answer(["report", database]).stdout
