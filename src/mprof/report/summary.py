"""The whole-program figures, derived once for the text, JSON and HTML
reports: what was kept at exit, the average size, the rates."""

from __future__ import annotations

import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .model import Model, RunInfo
from .tables import blocks

# Entry points and unusual events as the summary names them, with their
# keys in the summary table (mprof(5)'s SUMM section).
CALLS = (("malloc", "malloc_calls"), ("calloc", "calloc_calls"), ("realloc", "realloc_calls"),
         ("memalign", "memalign_calls"), ("new", "new_calls"), ("free", "free_calls"), ("delete", "delete_calls"))
UNUSUAL = (("free(NULL)", "free_null"), ("unknown frees", "unknown_frees"), ("failed", "failed_allocs"),
           ("early", "early_allocs"), ("untracked", "untracked_allocs"), ("inherited frees", "inherited_frees"),
           ("truncated chains", "truncated_chains"))


@dataclass(frozen=True)
class Figures:
    allocs: int
    bytes_allocated: int
    frees: int
    bytes_freed: int
    kept_objects: int
    kept_bytes: int
    runtime_objects: int  # of those, what the C and C++ runtimes keep on purpose
    runtime_bytes: int
    max_live_objects: int
    max_live_bytes: int
    average_size: float
    elapsed_seconds: float
    bytes_per_second: float
    allocs_per_second: float


def figures(model: Model) -> Figures:
    s = model.summary
    assert model.leaks_and_calls
    allocs, allocated = s["allocs"], s["bytes_allocated"]
    seconds = s["elapsed_ns"] / 1e9
    return Figures(
        allocs=allocs, bytes_allocated=allocated, frees=s["frees"], bytes_freed=s["bytes_freed"],
        kept_objects=allocs - s["frees"], kept_bytes=model.kept_bytes,
        runtime_objects=sum(leak.blocks for leak in model.leaks if leak.runtime),
        runtime_bytes=sum(leak.bytes for leak in model.leaks if leak.runtime),
        max_live_objects=s["max_live_objects"], max_live_bytes=s["max_live_bytes"],
        average_size=allocated / allocs if allocs else 0.0, elapsed_seconds=seconds,
        bytes_per_second=allocated / seconds if seconds else 0.0,
        allocs_per_second=allocs / seconds if seconds else 0.0)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def run_notes(run: RunInfo) -> list[str]:
    """How a run's file came to be written, when not at a normal end."""
    notes = []
    if run.checkpoint:
        taken = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime((run.start_unix_ns + run.elapsed_ns) / 1e9))
        if run.running:
            notes.append(f"checkpoint of {taken}, {run.elapsed_ns / 1e9:.3f} s into the run, taken while the "
                         f"process was running; it still was when this profile was made")
        else:
            notes.append(f"checkpoint of {taken}, {run.elapsed_ns / 1e9:.3f} s into the run: the process ended "
                         f"without writing its final file")
    elif not run.final:
        notes.append(f"snapshot at {run.elapsed_ns / 1e9:.3f} s")
    if run.attached:
        notes.append("attached: from the attach on")
    if run.end_signal:
        notes.append(f"ended by {signal_name(run.end_signal)}")
    if not run.call_graph:
        notes.append("mprof- mode")
    return notes


def kept_label(model: Model) -> str:
    """What the blocks allocated and not freed are: kept at exit only when
    every file was written as its process ended."""
    kinds = {"checkpoint" if run.checkpoint else "detach" if run.attached and run.final else
             "final" if run.final else "snapshot" for run in model.runs}
    if kinds <= {"final"}:
        return "kept at exit"
    if len(kinds) == 1:
        return f"live at the {kinds.pop()}"
    return "live at the end"


def rows(model: Model) -> list[tuple[str, str]]:
    """The summary's figures as labelled lines of text."""
    f = figures(model)
    s = model.summary
    return [
        ("allocations", f"{blocks(f.allocs)}, {f.bytes_allocated:,} bytes, {f.average_size:,.1f} bytes on average"),
        ("frees", f"{blocks(f.frees)}, {f.bytes_freed:,} bytes"),
        (kept_label(model), f"{blocks(f.kept_objects)}, {f.kept_bytes:,} bytes" + (
            f"; of these the runtime's own: {blocks(f.runtime_objects)}, {f.runtime_bytes:,} bytes"
            if f.runtime_objects else "")),
        ("most live", f"{blocks(f.max_live_objects)}, {f.max_live_bytes:,} bytes; the bytes at "
                      f"{s.get('peak_ns', 0) / 1e9:.3f} s, allocation {s.get('peak_allocs', 0):,}"
         if len(model.runs) <= 1 else "per process, in the process table: the processes' peaks do not add up"),
        ("temporaries", f"{blocks(s.get('temporary_allocs', 0))} freed before their thread allocated again"
                        f"{share_of(s.get('temporary_allocs', 0), f.allocs, ' of all allocations')}"),
        ("run time", f"{f.elapsed_seconds:.3f} s, {f.bytes_per_second:,.0f} bytes/s, "
                     f"{f.allocs_per_second:,.0f} allocations/s"),
        ("calls", _made(s, CALLS)),
        ("unusual", _made(s, UNUSUAL)),
    ] + pool_rows(s) + mapped_rows(s) + attach_rows(model)


def _made(s: Mapping[str, int], counts: Sequence[tuple[str, str]]) -> str:
    """The counts that are not 0, or none: a line that fits a narrow
    terminal's first screen."""
    return ", ".join(f"{name} {s[key]:,}" for name, key in counts if s[key]) or "none"


def attach_rows(model: Model) -> list[tuple[str, str]]:
    """What an attached run cannot know."""
    if not any(run.attached for run in model.runs):
        return []
    return [("before attaching", f"{model.summary['unknown_frees']:,} frees of blocks allocated before mprof "
                                 "attached, outside these figures (the unknown frees)")]


def pool_rows(s: Mapping[str, int]) -> list[tuple[str, str]]:
    """What the program's own allocators announced (libmprof(3)), when they
    announced anything."""
    if not (s.get("pool_alloc_calls") or s.get("backing_blocks")):
        return []
    resets = s.get("pool_resets", 0)
    return [("pools", f"{s.get('pool_alloc_calls', 0):,} objects announced, {s.get('pool_free_calls', 0):,} freed "
                      f"one by one; {resets:,} " + ("reset, trim or destruction" if resets == 1 else
                                                    "resets, trims or destructions")),
            ("pool backing", f"{blocks(s.get('backing_blocks', 0))}, {s.get('backing_bytes', 0):,} bytes, in no "
                             f"figure above; {blocks(s.get('backing_frees', 0))}, "
                             f"{s.get('backing_bytes_freed', 0):,} bytes freed")]


def mapped_rows(s: Mapping[str, int]) -> list[tuple[str, str]]:
    """The memory the program mapped itself, when it did."""
    calls = ("mmap_calls", "munmap_calls", "mremap_calls", "brk_calls")
    if not any(s.get(name) for name in calls):
        return []
    left = s.get("mapped_bytes", 0) - s.get("unmapped_bytes", 0)
    return [("mapped", f"mmap {s.get('mmap_calls', 0):,}, munmap {s.get('munmap_calls', 0):,}, mremap "
                       f"{s.get('mremap_calls', 0):,}, brk and sbrk {s.get('brk_calls', 0):,}; "
                       f"{s.get('mapped_bytes', 0):,} bytes mapped, {s.get('unmapped_bytes', 0):,} unmapped, "
                       f"{left:,} left; in the tables as [mmap] and [brk], in no figure above")]


def share_of(part: int, whole: int, of: str) -> str:
    """", 12% of all allocations": a share to one decimal, none of nothing."""
    return f", {part * 100 / whole:.1f}%{of}" if whole else ""


def peak_moment(model: Model) -> str:
    """When the live bytes were at their highest, and how much."""
    s = model.summary
    return (f"The peak: {s.get('max_live_bytes', 0):,} bytes live at {s.get('peak_ns', 0) / 1e9:.6f} s, "
            f"after {s.get('peak_allocs', 0):,} of {s.get('allocs', 0):,} allocations.")
