"""LeakSanitizer's suppressions applied to a profile's never-freed blocks.

The rules are LSan's, so that a team's existing suppression file works
unchanged: a line `leak:PATTERN` (other kinds, blank lines and `#` comments
are skipped); a pattern matches a module's path, a function's name or a
source file's name with LSan's template matching (`*` any text, `^` at the
start and `$` at the end anchor it, anything else is found anywhere in the
text).  LSan matches a leak's whole allocation stack; so does this, on the
exact whole call paths of the profile.  The leak table's rows, partial
chains of the innermost frames, lose what the suppressed paths under them
kept; a row left with nothing kept disappears.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from ..reducer.errors import MprofError
from .model import LeakRow, Model, PathRow, SuppressedRow, of_kind
from .names import rust_path


@dataclass(frozen=True)
class Suppression:
    pattern: str
    origin: str  # FILE:LINE, or the program's __lsan_default_suppressions

    def matches(self, text: str) -> bool:
        return template_match(self.pattern, text)


def template_match(template: str, text: str) -> bool:
    """LSan's TemplateMatch: the pieces between `*` found in turn, each at
    its first place after the last, so that a file behaves as it does under
    LSan, first-found quirks included."""
    if not text:
        return False
    anchored = template.startswith("^")
    if anchored:
        template = template[1:]
    after_asterisk = False
    at = 0
    while template:
        if template[0] == "*":
            template, anchored, after_asterisk = template[1:], False, True
            continue
        if template[0] == "$":
            return at == len(text) or after_asterisk
        if at == len(text):
            return False
        ends = [n for n in (template.find("*"), template.find("$")) if n >= 0]
        piece, template = (template[:min(ends)], template[min(ends):]) if ends else (template, "")
        found = text.find(piece, at)
        if found < 0 or (anchored and found != at):
            return False
        at = found + len(piece)
        anchored = after_asterisk = False
    return True


# What a suppressions file may hold (mprof(1)): far more than any real one,
# so that a file that is not one (/dev/zero, a binary, a huge sparse file)
# is refused at once, in one line, never read whole.
MAX_LINE = 64 << 10  # bytes of a line, its end not counted
MAX_FILE = 1 << 20
# The most of a refused line that its message shows.
SHOWN = 200


def parse(text: str, source: str) -> list[Suppression]:
    """The leak suppressions of a file's text; source names it in origins."""
    return _parse(text.split("\n"), source)


def _parse(lines: Iterable[str], source: str) -> list[Suppression]:
    found = []
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        kind, colon, pattern = line.partition(":")
        if not colon:
            shown = line if len(line) <= SHOWN else line[:SHOWN] + "..."
            # Raw: the line is escaped once, as every message is, when printed.
            raise MprofError(f"{source}:{number}: not a suppression (TYPE:PATTERN): '{shown}'")
        if kind.strip() == "leak" and pattern.strip():
            found.append(Suppression(pattern.strip(), f"{source}:{number}"))
    return found


def _lines(path: Path) -> Iterator[str]:
    """A file's lines, read one at a time within MAX_LINE and MAX_FILE;
    bytes that are not UTF-8 kept as surrogates, as names are."""
    try:
        with open(path, "rb") as file:
            total = 0
            for number in itertools.count(1):
                line = file.readline(MAX_LINE + 1)
                if not line:
                    return
                total += len(line)
                if total > MAX_FILE:
                    raise MprofError(f"{path}: not a suppressions file: more than {MAX_FILE:,} bytes")
                if len(line) > MAX_LINE and not line.endswith(b"\n"):
                    raise MprofError(f"{path}:{number}: not a suppressions file: a line of more than "
                                     f"{MAX_LINE:,} bytes")
                if b"\0" in line:
                    raise MprofError(f"{path}:{number}: not a suppressions file: a NUL byte")
                yield line.decode("utf-8", "surrogateescape")
    except OSError as error:
        raise MprofError(f"{path}: cannot read the suppressions: {error.strerror or error}") from None


def read(paths: Iterable[Path]) -> list[Suppression]:
    """The suppressions of the files, each pattern once: the first of a
    pattern's rules is the one that matches, so the others never take
    anything (and a file that repeats one costs no more to apply)."""
    found: dict[str, Suppression] = {}
    for path in paths:
        for rule in _parse(_lines(path), str(path)):
            found.setdefault(rule.pattern, rule)
    return list(found.values())


def _frames(model: Model, node: int | None) -> list[tuple[int, str, int]]:
    """A path's frames, innermost first, as the leak table's rows name them."""
    return [(row.function, row.file, row.line) for row in model.frames(node)]


def _match(model: Model, frames: list[tuple[int, str, int]], rules: list[Suppression]) -> Suppression | None:
    for function_id, file, _ in frames:
        function = model.functions[function_id]
        for rule in rules:
            # A Rust v0 name is stored with its crates' disambiguators
            # (alloc[f1e2...]::vec): a rule names the path as Rust prints it.
            if (rule.matches(function.module) or rule.matches(function.full_name)
                    or rule.matches(rust_path(function.full_name)) or rule.matches(file)):
                return rule
    return None


def _less(row: LeakRow, paths: list[PathRow]) -> LeakRow:
    """The row less the paths' blocks of its kind."""
    taken = [of_kind(path, row.kind) for path in paths]
    chain = (row.chain[0] - sum(p.allocs for p in paths), row.chain[1] - sum(p.frees for p in paths),
             row.chain[2] - sum(sum(p.bytes) for p in paths), row.chain[3] - sum(sum(p.freed) for p in paths))
    return row._replace(blocks=row.blocks - sum(blocks for blocks, _ in taken),
                        bytes=row.bytes - sum(size for _, size in taken), chain=chain)


def suppress(model: Model, rules: list[Suppression]) -> Model:
    """The model without the suppressed never-freed blocks in its leak rows,
    its paths marked, and what each suppression took; the runtimes' own
    blocks, which reports already show apart, are left to them."""
    if not rules:
        return model
    rows = [leak for leak in model.leaks if not leak.runtime and leak.blocks]
    keys: dict[tuple[tuple[int, str, int], ...], list[LeakRow]] = {}
    for leak in rows:
        keys.setdefault(tuple((f.function, f.file, f.line) for f in leak.frames), []).append(leak)
    taken: dict[int, list[PathRow]] = {}  # by id of the leak row the path lies under
    totals: dict[Suppression, list[int]] = {}
    marks: dict[int, str] = {}
    for n, path in enumerate(model.paths):
        kept_objects, kept = path.allocs - path.frees, sum(path.bytes) - sum(path.freed)
        rule = _match(model, frames := _frames(model, path.node), rules) if kept_objects and not path.runtime \
            else None
        if rule is None:
            continue
        marks[n] = rule.pattern
        total = totals.setdefault(rule, [0, 0])
        total[0] += kept_objects
        total[1] += kept
        # The leak rows (one a kind) whose partial chain is the longest start of this path.
        for length in range(len(frames), 0, -1):
            chain_rows = keys.get(tuple(frames[:length]))
            if chain_rows is not None:
                for row in chain_rows:
                    taken.setdefault(id(row), []).append(path)
                break
    leaks = []
    has_paths = bool(model.paths)
    for leak in model.leaks:
        if id(leak) in taken:
            leak = _less(leak, taken[id(leak)])
            if not leak.blocks and not leak.bytes:
                continue
        elif not has_paths and leak in rows and (
                rule := _match(model, [(f.function, f.file, f.line) for f in leak.frames], rules)):
            # A profile without whole paths: the row's own frames decide.
            total = totals.setdefault(rule, [0, 0])
            total[0] += leak.blocks
            total[1] += leak.bytes
            continue
        leaks.append(leak)
    used = sorted((SuppressedRow(rule.pattern, rule.origin, objects, kept) for rule, (objects, kept) in totals.items()),
                  key=lambda row: (-row.bytes, row.origin))
    return replace(model, leaks=leaks, path_suppressions=marks, suppressed=used)
