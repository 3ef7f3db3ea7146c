"""The process table of a report of several processes: each process image
with its own figures, which the merged tables add up."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .model import Model
from .summary import run_notes


@dataclass(frozen=True)
class ProcessRow:
    pid: int
    ppid: int
    program: str  # the executable's name
    origin: str  # "forked": a fork child before any exec; "executed": a program image
    allocations: int
    bytes: int
    peak_live: int  # most bytes live at once in this process
    kept: int  # bytes never freed
    command: str


def process_rows(model: Model) -> list[ProcessRow]:
    """One row per run, in the order they started (a parent before its
    children), with how its file came to be written when not at its end."""
    rows = []
    for run in sorted(model.runs, key=lambda run: (run.start_unix_ns, run.pid)):
        figures = run.figures
        notes = "".join(f" ({note})" for note in run_notes(run))
        rows.append(ProcessRow(
            run.pid, run.ppid, os.path.basename(run.program), "forked" if run.forked else "executed",
            figures.get("allocs", 0), figures.get("bytes_allocated", 0), figures.get("max_live_bytes", 0),
            figures.get("bytes_allocated", 0) - figures.get("bytes_freed", 0),
            (run.command_line or run.program) + notes))
    return rows


def merged(model: Model) -> bool:
    """Whether the tables add up several processes."""
    return len(model.runs) > 1
