"""The viewer's side of watching (mprof(5), WATCHING A RUNNING PROCESS): a
request file, in a directory only the process's user can use, names where
the process writes its snapshots (and asks, when the user does, for the
live blocks classified), and is changed each time newer figures are
wanted; the monitor answers from a thread of its own."""

from __future__ import annotations

import mmap
import os
import shutil
import stat
import tempfile
from pathlib import Path
from types import TracebackType

from ..reducer.errors import MprofError


def request_directories(uid: int) -> tuple[Path, Path]:
    """Where a process of uid's looks for requests, in its order: the user's
    runtime directory (/run/mprof for root), then the one in /tmp."""
    runtime = Path("/run/mprof") if uid == 0 else Path(f"/run/user/{uid}")
    return runtime, Path(f"/tmp/mprof-{uid}")


def _private(directory: os.stat_result, uid: int) -> bool:
    """What the monitor asks of the directory: a directory of the user's
    (not a symbolic link) that no one else can read, write or search."""
    return stat.S_ISDIR(directory.st_mode) and directory.st_uid == uid and directory.st_mode & 0o077 == 0


def request_directory() -> Path:
    """The directory of this user's requests, made when it is missing: the
    runtime directory where there is one, else /tmp/mprof-UID, which must
    be a private directory of this user's."""
    uid = os.geteuid()
    runtime, shared = request_directories(uid)
    if uid == 0:
        try:
            runtime.mkdir(mode=0o700)
        except OSError:
            pass  # there already, or /run cannot have it: checked below
    try:
        if _private(runtime.lstat(), uid):
            return runtime
    except OSError:
        pass
    try:
        shared.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as error:
        raise MprofError(f"{shared}: cannot create it: {error.strerror}") from None
    try:
        there = shared.lstat()
    except OSError as error:
        raise MprofError(f"{shared}: {error.strerror}") from None
    if stat.S_ISDIR(there.st_mode) and there.st_uid == uid and there.st_mode & 0o077:
        shared.chmod(0o700)  # ours, made by hand: the monitor ignores it unless private
    elif not _private(there, uid):
        what = "a directory" if stat.S_ISDIR(there.st_mode) else "a symbolic link" if stat.S_ISLNK(
            there.st_mode) else "a file"
        raise MprofError(f"{shared}: {what} of uid {there.st_uid}'s, not yours: requests to your processes go "
                         "there only when it is a directory of yours that only you can use; have it removed (root "
                         "can) and try again")
    return shared


def request_path(pid: int) -> Path:
    return request_directory() / f"mprof-watch.{pid}"


def _effective_uid(pid: int) -> int | None:
    """The effective uid on /proc/PID/status's Uid: line (real, effective,
    saved, file system)."""
    with open(f"/proc/{pid}/status", "rb") as status:
        for line in status:
            if line.startswith(b"Uid:") and len(line.split()) > 2:
                return int(line.split()[2])
    return None


def check_watchable(pid: int) -> None:
    """Refuses, in one line, a process that cannot be watched."""
    try:
        # Owned by the process's user, or by root while it is not dumpable.
        owner = os.stat(f"/proc/{pid}/status").st_uid
        user = _effective_uid(pid)
    except FileNotFoundError:
        raise MprofError(f"process {pid}: no such process") from None
    except OSError as error:
        raise MprofError(f"/proc/{pid}/status: {error.strerror}") from None
    if user is None:
        user = owner
    if user != os.geteuid():
        raise MprofError(f"process {pid}: belongs to another user (uid {user}), and the monitor answers only "
                         "the user it runs as")
    if owner != user:
        raise MprofError(f"process {pid}: is not dumpable (it changed its user or group, or made itself so), and "
                         "the monitor answers no one then")


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
    """The process's resident set now, None once it has ended (an ended
    process not yet waited for reads as no pages at all)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") if pages else None


def has_monitor(pid: int) -> bool:
    """Whether libmprof is mapped into the process (a program that linked
    it in statically has it without this)."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as maps:
            return b"/libmprof" in maps.read()
    except OSError:
        return False


# A string of the monitor's own, in its code however it was linked and
# stripped: the name of the variable it reads its output from.
_MONITOR_MARK = b"MPROF_OUTPUT"


def runs_monitor(pid: int) -> bool:
    """Whether the process has the monitor: libmprof mapped, or linked into
    its executable; True when that cannot be read, so as not to refuse a
    process that may answer."""
    if has_monitor(pid):
        return True
    try:
        with open(f"/proc/{pid}/exe", "rb") as executable, \
                mmap.mmap(executable.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return mapped.find(_MONITOR_MARK) >= 0
    except (OSError, ValueError):
        return True


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
        # The answers to a request that says classify: a name of their own,
        # so that one that comes without the leak kinds is known to be the
        # process's refusal, not an answer written before it saw the request.
        self.classified = self._directory / "classified.mprof"
        self._seen: dict[Path, tuple[int, int]] = {}  # each name's answer last taken: its inode and modification time
        self._classifying = False  # asked to classify, and no answer to that taken yet
        self._says_classify = False  # what the request written says
        try:
            self._inode = self._write_request(False)
        except BaseException:
            shutil.rmtree(self._directory, ignore_errors=True)
            raise

    def _write_request(self, classify: bool) -> int:
        """Creates the request afresh, never through a symbolic link: an
        older one (another viewer's, or one a killed viewer left) is
        replaced."""
        request = (f"{self.classified}\nclassify\n" if classify else f"{self.answer}\n").encode()
        self._says_classify = classify
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

    def ask(self, classify: bool = False) -> None:
        """Asks for newer figures: any change of the request is one; this
        one its new modification and change times, or a new request when
        what it asks changes.  classify asks for the live blocks classified
        too (mprof(5)), which costs the process a scan with every thread
        stopped: asked so until that answer is taken (a process busy writing
        another answer skips it), then a request of one line again."""
        classify = classify or self._classifying
        self._classifying = classify
        try:
            if classify == self._says_classify:
                os.utime(self.request)
                return
        except FileNotFoundError:
            pass
        self._inode = self._write_request(classify)

    def answered(self) -> Path | None:
        """The newest answer come since the last taken (self.answer, or
        self.classified); an older one come meanwhile is passed over."""
        new = []
        for name in (self.answer, self.classified):
            try:
                answer = name.stat()
            except FileNotFoundError:
                continue
            written = answer.st_ino, answer.st_mtime_ns  # each answer is a new file, renamed over the last
            if written != self._seen.get(name):
                self._seen[name] = written
                new.append((answer.st_mtime_ns, name == self.classified, name))
        if not new:
            return None
        _, classified, newest = max(new)
        if classified:
            self._classifying = False
        return newest

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
