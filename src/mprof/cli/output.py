"""The one writer of the files the commands write for the user (pages,
exports, databases): whole or not at all, and never in place of what is not
a file.

The path given is followed through symbolic links: the user named the link,
and what it points at is written.  Then, by what is there:

- nothing, or a regular file: a temporary file beside it, renamed over it,
  so that a reader never sees half a file and a failure leaves what was
  there;
- a character device or a FIFO (/dev/null, /dev/stdout to a pipe or a
  terminal): written through, opened without creating or truncating it;
- a link to one of mprof's own descriptors (/dev/stdout, /dev/stderr,
  /dev/fd/N, /proc/self/fd/N): written to that descriptor, whatever it is
  open on, as a shell's redirection made it (a file opened with >> is
  appended to, not replaced);
- anything else (a directory, a socket, a block device): refused in one
  line, before any work is done where the command checks first
  (check_output).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..reducer.errors import MprofError

# What is refused, in the words of the message.
_REFUSED = ((stat.S_ISSOCK, "a socket"), (stat.S_ISBLK, "a block device"))
_CHUNK = 1 << 20
_DESCRIPTOR_PATH = re.compile(r"/(?:dev|proc/self)/fd/([0-9]+)")
_LINKS_FOLLOWED = 40  # as the kernel's own bound on a chain of links


@dataclass(frozen=True)
class Output:
    """Where a command's output goes, as check_output found it."""

    given: Path
    """The path as the user gave it: every message names it."""
    target: Path
    """The file to replace (the given path resolved through symbolic
    links), or the device or FIFO to write through (the given path, opened
    as the system follows it: /dev/stdout is a link to a descriptor)."""
    through: bool
    """A character device or a FIFO: written through, not replaced."""
    replaces: bool
    """A regular file is there (its permissions are kept)."""
    descriptor: int | None = None
    """The descriptor of mprof's own that the path names: written to."""

    def write(self, content: str | bytes) -> None:
        """Writes content: a str as UTF-8, undecodable bytes as they came."""
        data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content
        if self.through:
            self._write_through(lambda descriptor: _write_all(descriptor, data))
            return
        with self.building() as temporary, open(temporary, "wb") as file:
            file.write(data)

    @contextmanager
    def building(self) -> Iterator[Path]:
        """A new, empty temporary file to make the output in (an SQLite
        database); when the block ends without an exception, it is renamed
        over the target, or its bytes copied through to a device or FIFO.
        On an exception it is removed and the target left as it was."""
        directory = None if self.through else self.target.parent
        try:
            descriptor, name = tempfile.mkstemp(prefix=f".{self.target.name}.", suffix=".tmp", dir=directory)
        except OSError as error:
            raise self._error(error) from None
        os.close(descriptor)
        temporary = Path(name)
        try:
            yield temporary
            if self.through:
                self._write_through(lambda descriptor: _copy(temporary, descriptor))
            else:
                self._put_in_place(temporary)
        finally:
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass

    def _put_in_place(self, temporary: Path) -> None:
        # What is there now must still be a file or nothing: a node made
        # there since the check is not renamed over either.
        found = _found(self.given)
        if found is not None and not stat.S_ISREG(found.st_mode):
            raise MprofError(_refusal(self.given, found.st_mode))
        # mkstemp makes 0600: a file replaced keeps its permissions, a new
        # one is shared like any file the user writes.
        mode = found.st_mode & 0o7777 if found is not None else 0o666 & ~_umask()
        try:
            os.chmod(temporary, mode)
            os.replace(temporary, self.target)
        except OSError as error:
            raise self._error(error) from None

    def _write_through(self, write: Callable[[int], None]) -> None:
        if self.descriptor is not None:
            try:
                write(self.descriptor)
            except OSError as error:
                raise self._error(error) from None
            return
        try:
            descriptor = os.open(self.target, os.O_WRONLY | os.O_CLOEXEC | os.O_NOCTTY)
        except OSError as error:
            raise self._error(error) from None
        try:
            mode = os.fstat(descriptor).st_mode
            if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
                # Replaced by something else since the check: not written into.
                raise MprofError(_refusal(self.given, mode) if not stat.S_ISREG(mode)
                                 else f"{self.given}: changed into a file while mprof worked: not written")
            write(descriptor)
        except OSError as error:
            raise self._error(error) from None
        finally:
            os.close(descriptor)

    def _error(self, error: OSError) -> MprofError:
        return MprofError(f"{self.given}: cannot write: {error.strerror or error}")


def check_output(path: Path) -> Output:
    """Where path's output would go, or an MprofError in one line when
    nothing may be written there: a command calls it before its work, so
    that a wrong -o is refused at once."""
    found = _found(path)
    descriptor = _descriptor(path)
    if descriptor is not None and found is not None:
        return Output(path, path, through=True, replaces=False, descriptor=descriptor)
    if found is None or stat.S_ISREG(found.st_mode):
        return Output(path, Path(os.path.realpath(path)), through=False, replaces=found is not None)
    if stat.S_ISCHR(found.st_mode) or stat.S_ISFIFO(found.st_mode):
        return Output(path, path, through=True, replaces=False)
    raise MprofError(_refusal(path, found.st_mode))


def write_output(path: Path, content: str | bytes) -> None:
    """Writes a command's output file by the rules above."""
    check_output(path).write(content)


@contextmanager
def building_output(path: Path) -> Iterator[Path]:
    """A temporary file to make a command's output file in, put in place by
    the rules above when the block ends (see Output.building)."""
    with check_output(path).building() as temporary:
        yield temporary


def _found(path: Path) -> os.stat_result | None:
    """What is at path, symbolic links followed; None when nothing is (a
    link to nothing included: what it names is made)."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        # Not a directory on the way, a loop of links, no permission.
        if error.errno == errno.ENOTDIR:
            raise MprofError(f"{path}: cannot write: a part of the path is not a directory") from None
        raise MprofError(f"{path}: cannot write: {error.strerror}") from None


def _descriptor(path: Path) -> int | None:
    """The descriptor of this process that path names, through its chain of
    symbolic links (/dev/stdout is one to /proc/self/fd/1), or None."""
    current = os.path.abspath(path)
    for _ in range(_LINKS_FOLLOWED):
        named = _DESCRIPTOR_PATH.fullmatch(current)
        if named:
            return int(named[1])
        try:
            current = os.path.join(os.path.dirname(current), os.readlink(current))
        except OSError:
            return None
        current = os.path.normpath(current)
    return None


def _refusal(path: Path, mode: int) -> str:
    if stat.S_ISDIR(mode):
        return f"{path}: is a directory"
    what = next((name for test, name in _REFUSED if test(mode)), "neither a file nor a device")
    return f"{path}: is {what}, not a file mprof can write"


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view[:_CHUNK]):]


def _copy(source: Path, descriptor: int) -> None:
    with open(source, "rb") as file:
        while chunk := file.read(_CHUNK):
            _write_all(descriptor, chunk)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
