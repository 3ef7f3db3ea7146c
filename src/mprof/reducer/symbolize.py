"""Return addresses to logical frames, through mprof-resolve (libdw).

mprof-resolve is a small C program (resolve/ in the tree) driven over pipes; its
protocol is described at the top of its source.  An address it cannot name
becomes module+0xoffset, never nothing.
"""

from __future__ import annotations

import itertools
import os
import re
import select
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import source_tree
from .errors import MprofError
from .escape import printable
from .records import Module

# Addresses per request line: long enough to amortise the round trip.
_BATCH = 2000
# How long the resolver may stay silent before it counts as stuck: libdw
# indexes a large library's DWARF in seconds, not minutes.
_DEFAULT_TIMEOUT = 300.0


def escaped(text: str) -> str:
    """A field as the protocol carries it: a backslash as \\\\, a control
    byte as \\xNN, every other byte as it is."""
    out = bytearray()
    for byte in text.encode("utf-8", "surrogateescape"):
        if byte == 0x5C:
            out += b"\\\\"
        elif byte < 0x20 or byte == 0x7F:
            out += b"\\x%02x" % byte
        else:
            out.append(byte)
    return out.decode("utf-8", "surrogateescape")


_ESCAPE = re.compile(rb"\\(\\|x[0-9a-fA-F]{2})")


def unescaped(field: str) -> str:
    if "\\" not in field:
        return field
    data = _ESCAPE.sub(lambda match: b"\\" if match.group(1) == b"\\" else bytes([int(match.group(1)[1:], 16)]),
                       field.encode("utf-8", "surrogateescape"))
    return data.decode("utf-8", "surrogateescape")


@dataclass(frozen=True)
class Frame:
    function: str  # demangled name, or module+0xoffset when unknown
    file: str
    line: int
    module: str
    offset: int  # of the address in its module
    inlined: bool


def resolver_path() -> Path:
    """MPROF_RESOLVE (set by the installed launcher), or the one the source
    tree built."""
    configured = os.environ.get("MPROF_RESOLVE")
    candidates = [Path(configured)] if configured else []
    candidates.append(source_tree.BUILD / "mprof-resolve")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("mprof-resolve")
    if found:
        return Path(found)
    raise MprofError("mprof-resolve not found (run make first)")


def _unknown(address: int, modules: Sequence[Module]) -> Frame:
    for module in modules:
        if module.path and module.start <= address < module.end:
            name = os.path.basename(module.path) or module.path
            offset = address - module.bias
            return Frame(f"{name}+{offset:#x}", "", 0, module.path, offset, False)
    return Frame(f"{address:#x}", "", 0, "", address, False)


def debuginfod_urls() -> str:
    """The debuginfod servers the resolver may ask, as libdebuginfod reads
    them: DEBUGINFOD_URLS, space-separated; empty: none."""
    return os.environ.get("DEBUGINFOD_URLS", "").strip()


def _request(addresses: Sequence[int]) -> str:
    return "resolve\t" + "\t".join(f"{address:x}" for address in addresses) + "\n"


class Resolver:
    """One mprof-resolve process for one process image's modules."""

    def __init__(self, modules: Sequence[Module], warn: WarningSink) -> None:
        self._modules = list(modules)
        self._warn = warn
        self._timeout = float(os.environ.get("MPROF_RESOLVE_TIMEOUT", _DEFAULT_TIMEOUT))
        # Modules opened that had no DWARF, here or from debuginfod, and
        # of those the ones whose symbol tables name no code either.
        self.without_debug: set[str] = set()
        self.without_symbols: set[str] = set()
        command = [str(resolver_path())]
        if debuginfod_urls():
            command.append("--debuginfod")
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        assert self._process.stdin is not None and self._process.stdout is not None
        self._requests = self._process.stdin.fileno()
        self._answers = self._process.stdout.fileno()
        # Requests are written only as far as the pipe takes them, while
        # answers are read: one request sent ahead of the answer being read
        # (see resolve) can then never leave both sides waiting on a full pipe.
        os.set_blocking(self._requests, False)
        self._unsent = b""
        self._buffer = bytearray()
        lines = []
        for module in self._modules:
            build_id = module.build_id.hex() or "-"
            lines.append(f"module\t{module.bias:x}\t{module.start:x}\t{module.end:x}\t{build_id}\t"
                         f"{escaped(module.path)}\n")
        self._send("".join(lines))
        for module in self._modules:
            # A module it cannot use is a warning: its addresses stay module+offset.
            for _ in self._lines_until_done(f"declaring {module.path}", errors_warn=True):
                pass

    def _send(self, text: str) -> None:
        self._unsent += text.encode("utf-8", "surrogateescape")
        self._write_unsent()

    def _write_unsent(self) -> None:
        try:
            written = os.write(self._requests, self._unsent)
        except BlockingIOError:
            return
        except BrokenPipeError:
            written = len(self._unsent)  # it stopped: reading its answer says so
        self._unsent = self._unsent[written:]

    def _answer(self, about: str) -> tuple[list[str], bool]:
        """The lines of the resolver's next answer, up to its "done", read
        whole (a line at a time costs more than the resolver's work); and
        whether it ended there, not where the resolver stopped."""
        searched = 0
        while True:
            if self._buffer.startswith(b"done\n"):
                del self._buffer[:5]
                return [], True
            end = self._buffer.find(b"\ndone\n", searched)
            if end >= 0:
                text = bytes(self._buffer[:end])
                del self._buffer[:end + 6]
                return text.decode("utf-8", "surrogateescape").split("\n"), True
            searched = max(0, len(self._buffer) - 5)
            readable, writable, _ = select.select([self._answers], [self._requests] if self._unsent else [], [],
                                                  self._timeout)
            if writable:
                self._write_unsent()
            if not readable:
                if writable:
                    continue
                self._process.kill()
                raise MprofError(f"mprof-resolve gave no answer in {self._timeout:g} s {about}")
            chunk = os.read(self._answers, 1 << 16)
            if not chunk:
                whole = self._buffer.rfind(b"\n") + 1
                lines = bytes(self._buffer[:whole]).decode("utf-8", "surrogateescape").split("\n")[:-1]
                del self._buffer[:whole]
                return lines, False
            self._buffer += chunk

    def _lines_until_done(self, about: str, errors_warn: bool = False) -> Iterable[list[str]]:
        lines, whole = self._answer(about)
        for line in lines:
            fields = [unescaped(field) for field in line.split("\t")]
            if fields[0] == "warning":
                self._warn.warn(fields[1] if len(fields) > 1 else "mprof-resolve: warning")
            elif fields[0] == "nodebug":
                self.without_debug.add(fields[1] if len(fields) > 1 else "")
            elif fields[0] == "nosymbols":
                self.without_symbols.add(fields[1] if len(fields) > 1 else "")
            elif fields[0] == "error":
                message = f"mprof-resolve: {fields[1] if len(fields) > 1 else 'error'}"
                if not errors_warn:
                    raise MprofError(message)
                self._warn.warn(message)
            else:
                yield fields
        if not whole:
            raise MprofError(f"mprof-resolve stopped unexpectedly {about}")

    def resolve(self, addresses: Iterable[int], progress: Progress | None = None) -> dict[int, list[Frame]]:
        """Logical frames of each return address, innermost first."""
        wanted = sorted(set(addresses))
        batches = [wanted[start:start + _BATCH] for start in range(0, len(wanted), _BATCH)]
        result: dict[int, list[Frame]] = {}
        done = 0
        if batches:
            self._send(_request(batches[0]))
        for batch, following in itertools.zip_longest(batches, batches[1:]):
            # The next batch goes out before this answer is read: the
            # resolver looks it up while this side reads.
            if following:
                self._send(_request(following))
            current: list[Frame] = []
            for fields in self._lines_until_done("while resolving addresses"):
                if fields[0] == "frames":
                    current = result.setdefault(int(fields[1], 16), [])
                elif fields[0] == "frame":
                    function, file, line, module, offset, inlined = fields[1:7]
                    if function:
                        current.append(Frame(function, file, int(line), module, int(offset, 16), inlined == "1"))
            done += len(batch)
            if progress:
                progress.update(done, len(wanted))
        for address in wanted:
            if not result.get(address):
                result[address] = [_unknown(address, self._modules)]
        return result

    def types(self, module_path: str) -> list[tuple[int, str]]:
        if not any(module.path == module_path for module in self._modules):
            return []  # a file without the executable among its modules
        self._send(f"types\t{escaped(module_path)}\n")
        return [(int(fields[1]), fields[2]) for fields in self._lines_until_done(f"reading the types of {module_path}")
                if fields[0] == "type"]

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._send("quit\n")
            self._process.stdin.close()
            # Closed input ends a resolver that missed the quit too (one
            # stopped mid-answer by an error here); a stuck one is killed.
            try:
                self._process.wait(self._timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> Resolver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WarningSink:
    """The reduction's warnings, each once (a missing library is named once
    per profile), in the order found.  They are kept, not printed: the
    command prints them once the profile is written, so that an input it
    refuses gets its one line of error and nothing more."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def warn(self, message: str) -> None:
        if message not in self.messages:
            self.messages.append(message)

    def print(self) -> None:
        for message in self.messages:
            print(f"mprof: warning: {printable(message)}", file=sys.stderr)


class Progress:
    """What the reducer is doing, on one rewritten line of a terminal; silent otherwise."""

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled
        self._task = ""

    def start(self, task: str) -> None:
        self._task = task
        self._show(f"mprof: {task}")

    def update(self, done: int, total: int) -> None:
        self._show(f"mprof: {self._task} {done}/{total}")

    def _show(self, line: str) -> None:
        """The line, cut to the terminal's width: one that wrapped would
        leave its first rows on the screen, where a carriage return does
        not go back."""
        if self._enabled:
            try:
                columns = os.get_terminal_size(sys.stderr.fileno()).columns
            except (OSError, ValueError):
                columns = 80
            # A terminal of no size says none (a pty no one sized): uncut.
            if 0 < columns <= len(line):
                line = line[:max(columns - 4, 1)] + "..."
            sys.stderr.write(f"\r\033[K{line}")
            sys.stderr.flush()

    def finish(self) -> None:
        if self._enabled:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
