"""Return addresses to logical frames, through mprof-resolve (libdw).

mprof-resolve is a small C program (reducer/resolve/) driven over pipes; its
protocol is described at the top of its source.  An address it cannot name
becomes module+0xoffset, never nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import MprofError
from .records import Module

# Addresses per request line: long enough to amortise the round trip.
_BATCH = 2000


@dataclass(frozen=True)
class Frame:
    function: str  # demangled name, or module+0xoffset when unknown
    file: str
    line: int
    module: str
    offset: int  # of the address in its module
    inlined: bool


def resolver_path() -> Path:
    """The resolver next to this package in a source tree, or where make install put it."""
    configured = os.environ.get("MPROF_RESOLVE")
    candidates = [Path(configured)] if configured else []
    here = Path(__file__).resolve().parent
    candidates += [here.parent / "build" / "mprof-resolve", here / "mprof-resolve"]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("mprof-resolve")
    if found:
        return Path(found)
    raise MprofError("mprof-resolve not found (run make first)")


def _unknown(address: int, modules: Sequence[Module]) -> Frame:
    for module in modules:
        if module.start <= address < module.end:
            name = os.path.basename(module.path) or module.path
            offset = address - module.bias
            return Frame(f"{name}+{offset:#x}", "", 0, module.path, offset, False)
    return Frame(f"{address:#x}", "", 0, "", address, False)


class Resolver:
    """One mprof-resolve process for one process image's modules."""

    def __init__(self, modules: Sequence[Module], warn: "WarningSink") -> None:
        self._modules = list(modules)
        self._warn = warn
        self._process = subprocess.Popen([str(resolver_path())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True, encoding="utf-8", errors="surrogateescape", bufsize=1)
        lines = []
        for module in self._modules:
            build_id = module.build_id.hex() or "-"
            lines.append(f"module\t{module.bias:x}\t{module.start:x}\t{module.end:x}\t{build_id}\t{module.path}\n")
        self._send("".join(lines))

    def _send(self, text: str) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(text)
        self._process.stdin.flush()

    def _lines_until_done(self) -> Iterable[list[str]]:
        assert self._process.stdout is not None
        while True:
            line = self._process.stdout.readline()
            if not line:
                raise MprofError("mprof-resolve stopped unexpectedly")
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "done":
                return
            if fields[0] == "warning":
                self._warn.warn(fields[1] if len(fields) > 1 else "")
            elif fields[0] == "error":
                raise MprofError(f"mprof-resolve: {fields[1] if len(fields) > 1 else 'error'}")
            else:
                yield fields

    def resolve(self, addresses: Iterable[int], progress: "Progress | None" = None) -> dict[int, list[Frame]]:
        """Logical frames of each return address, innermost first."""
        wanted = sorted(set(addresses))
        result: dict[int, list[Frame]] = {}
        for start in range(0, len(wanted), _BATCH):
            batch = wanted[start:start + _BATCH]
            self._send("resolve\t" + "\t".join(f"{a:x}" for a in batch) + "\n")
            current: list[Frame] = []
            address = 0
            for fields in self._lines_until_done():
                if fields[0] == "frames":
                    address = int(fields[1], 16)
                    current = result.setdefault(address, [])
                elif fields[0] == "frame":
                    function, file, line, module, offset, inlined = fields[1:7]
                    if function:
                        current.append(Frame(function, file, int(line), module, int(offset, 16), inlined == "1"))
            if progress:
                progress.update(min(start + _BATCH, len(wanted)), len(wanted))
        for address in wanted:
            if not result.get(address):
                result[address] = [_unknown(address, self._modules)]
        return result

    def types(self, module_path: str) -> list[tuple[int, str]]:
        self._send(f"types\t{module_path}\n")
        return [(int(fields[1]), fields[2]) for fields in self._lines_until_done() if fields[0] == "type"]

    def close(self) -> None:
        if self._process.poll() is None:
            try:
                self._send("quit\n")
            except BrokenPipeError:
                pass
            self._process.wait()

    def __enter__(self) -> "Resolver":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WarningSink:
    """Warnings on stderr, each once: a missing library is named once per profile."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def warn(self, message: str) -> None:
        if message not in self._seen:
            self._seen.add(message)
            print(f"mprof: warning: {message}", file=sys.stderr)


class Progress:
    """What the reducer is doing, on one rewritten line of a terminal; silent otherwise."""

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled
        self._task = ""

    def start(self, task: str) -> None:
        self._task = task
        if self._enabled:
            sys.stderr.write(f"\r\033[Kmprof: {task}")
            sys.stderr.flush()

    def update(self, done: int, total: int) -> None:
        if self._enabled:
            sys.stderr.write(f"\r\033[Kmprof: {self._task} {done}/{total}")
            sys.stderr.flush()

    def finish(self) -> None:
        if self._enabled:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
