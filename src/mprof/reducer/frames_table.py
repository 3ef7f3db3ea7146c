"""Each address's frames as libmprof-reduce reads them: outermost first,
from main on (whatever called main is start-up code), as numbers.
Functions, files and modules are numbered once for the whole reduction,
so the library's trees and graphs of several files speak of them alike."""

from __future__ import annotations

import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .records import DataFile
from .symbolize import Frame


@dataclass
class Names:
    functions: list[tuple[str, str]] = field(default_factory=list)  # (name, module) by number
    files: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    _numbers: dict[tuple[int, object], int] = field(default_factory=dict)

    def _number(self, kind: int, key: Any, into: list[Any]) -> int:
        number = self._numbers.get((kind, key))
        if number is None:
            number = self._numbers[(kind, key)] = len(into)
            into.append(key)
        return number

    def function(self, key: tuple[str, str]) -> int:
        return self._number(0, key, self.functions)

    def file(self, name: str) -> int:
        return self._number(1, name, self.files)

    def module(self, path: str) -> int:
        return self._number(2, path, self.modules)


@dataclass
class FramesTable:
    """One file's addresses' frames: those of address index a are
    frames[first[a]:first[a + 1]]; numbered holds four numbers a frame
    (function, file, line, inlined), the layout of struct mr_frame."""
    frames: list[Frame]
    first: array.array[int]
    numbered: array.array[int]
    from_main: bytes  # by address: its frames reach main
    site_module: array.array[int]  # by address: its innermost frame's module
    site_offset: array.array[int]  # and where in it, numbered: an offset may be any int (a module's absurd bias)


def _outermost_first(frames: Sequence[Frame]) -> tuple[list[Frame], bool]:
    ordered = list(reversed(frames))
    for position, frame in enumerate(ordered):
        if frame.function == "main" and not frame.inlined:
            return ordered[position:], True
    return ordered, False


def frames_table(data: DataFile, frames: Mapping[int, Sequence[Frame]], names: Names) -> FramesTable:
    """frames has every address the file's nodes name resolved."""
    used = set(data.calls.used_addresses(len(data.addresses)))
    flat: list[Frame] = []
    first = array.array("I", [0])
    numbered = array.array("I")
    from_main = bytearray(len(data.addresses))
    site_module = array.array("I", bytes(4 * len(data.addresses)))
    site_offset = array.array("Q", bytes(8 * len(data.addresses)))
    offsets: dict[int, int] = {}
    for index, address in enumerate(data.addresses):
        if index in used:
            outermost, from_main[index] = _outermost_first(frames[address])
            for frame in outermost:
                numbered.extend((names.function((frame.function, frame.module)), names.file(frame.file), frame.line,
                                 frame.inlined))
            flat += outermost
            site_module[index] = names.module(outermost[-1].module)
            site_offset[index] = offsets.setdefault(outermost[-1].offset, len(offsets))
        first.append(len(flat))
    numbered.extend((0, 0, 0, 0))  # never empty: its address is passed
    return FramesTable(flat, first, numbered, bytes(from_main), site_module, site_offset)
