"""The leak kinds in the reports: memcheck's LEAK SUMMARY, what the scan
could not look at, the line of runs not classified, and what the leak
gate counts."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from .. import leak_kinds
from ..reducer import format as fmt
from ..reducer.pools import MAPPED_FRAMES, POOL_MODULE
from .model import LeakRow, Model


@dataclass(frozen=True)
class KindTotal:
    kind: str  # memcheck's words, or unknown
    blocks: int
    bytes: int


def classified(model: Model) -> bool:
    """Whether any run's live blocks were classified."""
    return any(run.scan is not None for run in model.runs)


def _mapped(model: Model, leak: LeakRow) -> bool:
    """Whether the row is of regions the program mapped itself, which the
    heap's figures (and the gate) leave out."""
    if not leak.frames:
        return False
    function = model.functions[leak.frames[0].function]
    return function.module == POOL_MODULE and function.name in MAPPED_FRAMES.values()


def totals(model: Model) -> list[KindTotal]:
    """Blocks and bytes of each kind over the leak rows left after the
    suppressions, memcheck's four always, unknown when some run was not
    classified.  The regions the program mapped itself are no blocks of
    the heap: memcheck's LEAK SUMMARY has none of them either."""
    found = {kind: [0, 0] for kind in leak_kinds.KINDS}
    for leak in model.leaks:
        if _mapped(model, leak):
            continue
        if leak.kind in found or leak.kind == leak_kinds.UNKNOWN:
            row = found.setdefault(leak.kind, [0, 0])
            row[0] += leak.blocks
            row[1] += leak.bytes
    return [KindTotal(kind, blocks, size) for kind, (blocks, size) in found.items()]


def summary_lines(model: Model) -> list[str]:
    """memcheck's LEAK SUMMARY, the scan's notes and the suppressed, and
    what some runs not classified add; none when no run was (the leak
    table says so)."""
    if not classified(model):
        return []
    width = max(len(kind) for kind in (*leak_kinds.KINDS, "suppressed"))
    shown = [row for row in totals(model) if row.kind != leak_kinds.UNKNOWN]
    suppressed = (sum(row.objects for row in model.suppressed), model.suppressed_bytes)
    return ["LEAK SUMMARY:",
            *(f"  {row.kind:>{width}}: {row.bytes:,} bytes in {row.blocks:,} blocks" for row in shown),
            *([f"  {'suppressed':>{width}}: {suppressed[1]:,} bytes in {suppressed[0]:,} blocks"]
              if model.suppressed else []),
            *scan_notes(model), *not_classified_lines(model)]


def not_classified_lines(model: Model) -> list[str]:
    """The one line saying the blocks were not classified, when some run's
    were not; none when every run's were."""
    missing = [run for run in model.runs if run.scan is None]
    if not missing:
        return []
    which = "the blocks" if len(missing) == len(model.runs) else (
        f"the blocks of {len(missing)} of the {len(model.runs)} processes")
    return [f"Leak kinds: {which} were not classified (no LEAK section in the data file); listed as never freed"]


def scan_notes(model: Model) -> list[str]:
    """A line per run whose scan could not look at everything."""
    notes = []
    for run in model.runs:
        scan = run.scan
        if scan is None:
            continue
        if scan.flags & fmt.LEAK_THREADS_UNSTOPPED:
            notes.append(f"Leak scan of process {run.pid}: threads not stopped (the process was traced, or under "
                         f"a seccomp filter): {scan.threads_unstopped:,} threads' stacks scanned whole, their "
                         "registers not read")
        if scan.flags & fmt.LEAK_UNKNOWN_ROOTS:
            notes.append(f"Leak scan of process {run.pid}: memory of unknown contents (blocks from before the "
                         "attach) taken as roots: a block it points to is never called lost")
    return notes


def counted(model: Model, kinds: Collection[str]) -> tuple[int, int]:
    """The blocks and bytes --fail-on-leak counts: those of the kinds asked
    for, and every block never freed of runs not classified, the runtimes'
    own blocks and the mapped regions aside, after the suppressions."""
    rows = [leak for leak in model.leaks if (leak.kind in kinds or leak.kind == leak_kinds.UNKNOWN)
            and not leak.runtime and not _mapped(model, leak)]
    return sum(leak.blocks for leak in rows), sum(leak.bytes for leak in rows)


def total(model: Model, kind: str) -> int:
    """The bytes of one kind, the runtimes' own included, the regions the
    program mapped not (as in the LEAK SUMMARY)."""
    return sum(leak.bytes for leak in model.leaks if leak.kind == kind and not _mapped(model, leak))


def kinds_words(kinds: Collection[str]) -> str:
    """The kinds as a verdict names them, in memcheck's order."""
    return " or ".join(kind for kind in leak_kinds.KINDS if kind in kinds) or "of no kind"
