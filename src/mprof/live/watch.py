"""The viewer's side of watching (mprof(5), WATCHING A RUNNING PROCESS): a
request file names where the process writes its snapshots, and is
rewritten each time newer figures are wanted; the monitor answers from an
allocating thread."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from types import TracebackType

from ..reducer.errors import MprofError

REQUEST_DIRECTORY = Path("/tmp")


def request_path(pid: int) -> Path:
    return REQUEST_DIRECTORY / f"mprof-watch.{pid}"


def check_watchable(pid: int) -> None:
    """Refuses, in one line, a process that cannot be watched."""
    try:
        owner = os.stat(f"/proc/{pid}").st_uid
    except FileNotFoundError:
        raise MprofError(f"process {pid}: no such process") from None
    if owner != os.geteuid():
        raise MprofError(f"process {pid}: belongs to another user (uid {owner}); the monitor answers only "
                         "its own user: run mprof top as that user")


def running(pid: int) -> bool:
    """Whether the process still runs: not ended, nor ended and not yet
    waited for."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
    except OSError:
        return False
    return bool(fields) and fields[0] not in (b"Z", b"X")


def resident_bytes(pid: int) -> int | None:
    """The process's resident set now, None once it has ended."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return None


def has_monitor(pid: int) -> bool:
    """Whether libmprof is mapped into the process (a program that linked
    it in statically has it without this)."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as maps:
            return b"/libmprof" in maps.read()
    except OSError:
        return False


class Watch:
    """One viewer's request, and the snapshots that answer it, in a private
    directory; both are removed when the watch ends."""

    def __init__(self, pid: int, viewer: str = "top") -> None:
        """viewer names the temporary directory of the answers."""
        check_watchable(pid)
        self.pid = pid
        self.request = request_path(pid)
        self._directory = Path(tempfile.mkdtemp(prefix=f"mprof-{viewer}-"))
        self.answer = self._directory / "snapshot.mprof"
        self._seen: tuple[int, int] | None = None  # the answer last taken: its inode and modification time
        try:
            self._inode = self._write_request()
        except BaseException:
            shutil.rmtree(self._directory, ignore_errors=True)
            raise

    def _write_request(self) -> int:
        """Creates the request afresh, never through a symbolic link: an
        older one (another viewer's, or one a killed viewer left) is
        replaced."""
        request = f"{self.answer}\n".encode()
        for _ in range(2):
            try:
                fd = os.open(self.request, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o600)
            except FileExistsError:
                try:
                    self.request.unlink()
                except OSError as error:
                    raise MprofError(f"{self.request}: cannot replace it: {error.strerror}") from None
                continue
            except OSError as error:
                raise MprofError(f"{self.request}: cannot create it: {error.strerror}") from None
            try:
                os.write(fd, request)
                return os.fstat(fd).st_ino
            finally:
                os.close(fd)
        raise MprofError(f"{self.request}: another viewer keeps making it")

    def ask(self) -> None:
        """Asks for newer figures: any change of the request is one; this
        one its new modification and change times."""
        try:
            os.utime(self.request)
        except FileNotFoundError:
            self._inode = self._write_request()

    def answered(self) -> Path | None:
        """The answer, when one has come since the last taken."""
        try:
            answer = self.answer.stat()
        except FileNotFoundError:
            return None
        written = answer.st_ino, answer.st_mtime_ns  # each answer is a new file, renamed over the last
        if written == self._seen:
            return None
        self._seen = written
        return self.answer

    def close(self) -> None:
        try:
            if self.request.stat().st_ino == self._inode:
                self.request.unlink()
        except OSError:
            pass
        shutil.rmtree(self._directory, ignore_errors=True)

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
