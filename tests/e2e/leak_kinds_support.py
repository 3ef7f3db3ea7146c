"""The leak kinds of one run as memcheck gives them (its LEAK SUMMARY and loss
records) and as mprof's database gives them (paths' per-kind columns), both
keyed by kind and by the program's innermost own function on the stack."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from e2e_support import LIBMPROF, mprof

KINDS = ("definite", "indirect", "possible", "reachable")
_WORDS = {"definitely lost": "definite", "indirectly lost": "indirect", "possibly lost": "possible",
          "still reachable": "reachable"}
# memcheck's own leak check, as the brief of issue 49 has it: every kind shown, default heuristics (all), and no
# freeing of libc's or libstdc++'s buffers at exit, which mprof's scan runs before.
MEMCHECK = ["valgrind", "--tool=memcheck", "--leak-check=full", "--show-leak-kinds=all", "--run-libc-freeres=no",
            "--run-cxx-freeres=no", "--trace-children=no", "--num-callers=40"]

Figures = tuple[int, int]  # blocks, bytes
Key = tuple[str, str | None]  # kind, the innermost of the program's own functions (None: none on the stack)


@dataclass
class Verdict:
    totals: dict[str, Figures] = field(default_factory=dict)
    by_function: dict[Key, Figures] = field(default_factory=dict)
    log: str = ""

    def lost(self) -> bool:
        return any(self.totals[kind] != (0, 0) for kind in ("definite", "indirect"))


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def bare(name: str) -> str:
    """A function's name without its parameters, as nm -C, memcheck and mprof may each print them."""
    return name.split("(", 1)[0].strip()


def own_functions(executable: Path) -> frozenset[str]:
    """The functions the program's source defines: text symbols of the executable that are no library template
    (no "::") and no start-up code (no leading underscore)."""
    listed = subprocess.run(["nm", "-C", "--defined-only", executable], capture_output=True, text=True,
                            check=True).stdout
    names = set()
    for line in listed.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in "Tt":
            name = bare(parts[2])
            if "::" not in name and not name.startswith("_"):
                names.add(name)
    return frozenset(names)


def _add(table: dict[Key, Figures], key: Key, blocks: int, size: int) -> None:
    had = table.get(key, (0, 0))
    table[key] = (had[0] + blocks, had[1] + size)


_RECORD = re.compile(r"^==\d+== ([\d,]+)(?: \(([\d,]+) direct, [\d,]+ indirect\))? bytes in ([\d,]+) blocks are "
                     r"(definitely lost|indirectly lost|possibly lost|still reachable) in loss record", re.MULTILINE)
_FRAME = re.compile(r"^==\d+==\s+(?:at|by) 0x[0-9A-Fa-f]+: (.*)$")
_SUMMARY = re.compile(r"(definitely lost|indirectly lost|possibly lost|still reachable): ([\d,]+) bytes in "
                      r"([\d,]+) blocks")


def leak_summary(text: str) -> dict[str, Figures]:
    """The four kinds of a LEAK SUMMARY, memcheck's or mprof report's, which writes its lines alike."""
    summary = text[text.index("LEAK SUMMARY:"):]
    totals = {_WORDS[words]: (_number(blocks), _number(size)) for words, size, blocks in _SUMMARY.findall(summary)[:4]}
    assert set(totals) == set(KINDS), summary
    return totals


def parse_memcheck(log: str, own: frozenset[str]) -> Verdict:
    """memcheck's log: its summary, and its loss records.  A definitely lost record counts its direct bytes alone
    (the indirect ones have records of their own)."""
    verdict = Verdict(log=log)
    verdict.totals = leak_summary(log)
    lines = log.splitlines()
    line_of = {offset: number for number, offset in enumerate(_offsets(log))}
    for record in _RECORD.finditer(log):
        function = None
        for line in lines[line_of[record.start()] + 1:]:
            frame = _FRAME.match(line)
            if not frame:
                break
            name = bare(re.sub(r" \((?:in )?[^()]*\)$", "", frame[1]))
            if name in own:
                function = name
                break
        _add(verdict.by_function, (_WORDS[record[4]], function), _number(record[3]),
             _number(record[2] or record[1]))
    _check_sums(verdict)
    return verdict


def _offsets(text: str) -> list[int]:
    starts, at = [], 0
    for line in text.splitlines(keepends=True):
        starts.append(at)
        at += len(line)
    return starts


def _check_sums(verdict: Verdict) -> None:
    """The records add up to the summary: no record was missed or read wrong."""
    for kind in KINDS:
        parts = [figures for (k, _), figures in verdict.by_function.items() if k == kind]
        assert (sum(p[0] for p in parts), sum(p[1] for p in parts)) == verdict.totals[kind], (kind, verdict.log)


def under_memcheck(command: Sequence[str | Path], own: frozenset[str], env: Mapping[str, str] | None = None,
                   cwd: Path | None = None) -> Verdict:
    completed = subprocess.run([*MEMCHECK, *map(str, command)], capture_output=True, text=True, env=env, cwd=cwd,
                               timeout=600)
    assert "LEAK SUMMARY:" in completed.stderr, completed.stderr[-3000:]
    return parse_memcheck(completed.stderr, own)


def _tls_modules(executable: Path) -> set[str]:
    """The executable or shared object and those it loads that have thread-local storage (a PT_TLS segment)."""
    listed = subprocess.run(["ldd", executable], capture_output=True, text=True, check=True).stdout
    modules = {str(executable)} | {line.split("=>")[1].split()[0] for line in listed.splitlines()
                                   if "=>" in line and "/" in line.split("=>")[1]}
    return {m for m in modules
            if " TLS " in subprocess.run(["readelf", "-lW", m], capture_output=True, text=True).stdout}


def tls_modules_added(program: Path) -> int:
    """How many modules with thread-local storage the monitor's preload brings into the program.  glibc gives
    each thread a DTV (dynamic thread vector), calloc'ed by pthread_create with a 16-byte slot per such module
    loaded: under mprof each of the program's DTVs is this many slots longer than under memcheck, whose preload
    has none."""
    added = {Path(m).resolve() for m in _tls_modules(LIBMPROF)} - {Path(m).resolve() for m in _tls_modules(program)}
    return len(added)


COLUMNS = [f"{kind}_{figure}" for kind in KINDS for figure in ("blocks", "bytes")]


def from_database(database: Path, own: frozenset[str]) -> Verdict:
    """mprof's figures per kind from the paths table, each path under the innermost of the program's functions
    among its frames (pools' and other bracketed frames are never the program's)."""
    db = sqlite3.connect(database)
    try:
        names = dict(db.execute("SELECT id, name FROM functions"))
        nodes = {node: (parent, function) for node, parent, function in
                 db.execute("SELECT id, parent_id, function_id FROM path_nodes")}
        rows = db.execute(f"SELECT node_id, {', '.join(COLUMNS)} FROM paths").fetchall()
    finally:
        db.close()
    verdict = Verdict(totals={kind: (0, 0) for kind in KINDS})
    for node, *figures in rows:
        function = None
        while node is not None:
            parent, function_id = nodes[node]
            if bare(names[function_id]) in own:
                function = bare(names[function_id])
                break
            node = parent
        for i, kind in enumerate(KINDS):
            blocks, size = figures[2 * i], figures[2 * i + 1]
            if blocks or size:
                _add(verdict.by_function, (kind, function), blocks, size)
                verdict.totals[kind] = (verdict.totals[kind][0] + blocks, verdict.totals[kind][1] + size)
    return verdict


def under_mprof(command: Sequence[str | Path], own: frozenset[str], directory: Path,
                env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Verdict:
    """The command under mprof run, as a user runs it, and the database mprof db makes of its one data file."""
    output, database = directory / "run.mprof", directory / "run.db"
    completed = subprocess.run([str(Path(__file__).resolve().parents[2] / "mprof"), "run", "--quiet", "-o",
                                str(output), "--", *map(str, command)], env=env, cwd=cwd, capture_output=True,
                               text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr
    mprof("db", output, "-o", database)
    return from_database(database, own)

