"""The mprof tables as JSON, names resolved, for scripts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from . import leak_summary
from . import summary as whole_program
from .model import CLASSES, Model
from .tables import (
    LeakPath,
    WholePath,
    allocators,
    bin_types,
    leak_paths,
    own_callers,
    peak_paths,
    shown_leak_paths,
    shown_whole_paths,
    temporary_paths,
)
from .text_tables import Options


def _by_class(values: tuple[int, ...] | list[int]) -> dict[str, int]:
    return dict(zip(CLASSES, values, strict=True))


def tables(model: Model, options: Options) -> dict[str, Any]:
    figures = whole_program.figures(model)
    summary: dict[str, float | None] = dict(model.summary)
    summary.update(kept_objects=figures.kept_objects, kept_bytes=figures.kept_bytes,
                   runtime_kept_objects=figures.runtime_objects, runtime_kept_bytes=figures.runtime_bytes,
                   suppressed_kept_objects=sum(row.objects for row in model.suppressed),
                   suppressed_kept_bytes=model.suppressed_bytes,
                   average_size=figures.average_size, elapsed_seconds=figures.elapsed_seconds,
                   allocation_rate_bytes_per_second=figures.bytes_per_second)
    if len(model.runs) > 1:
        # Each process's peak is in its run's figures; the peaks of several
        # processes do not add up, nor is their largest the program's.
        summary.update(max_live_objects=None, max_live_bytes=None)
    functions = model.functions

    def wholes(paths: Sequence[WholePath]) -> list[dict[str, Any]]:
        """The paths, each named as the text's tables name it unfolded."""
        return [{"path": shown.text,
                 "frames": [{"function": functions[f].name, "signature": functions[f].full_name}
                            for f in path.functions]}
                for path, shown in zip(paths, shown_whole_paths(model, paths, None), strict=True)]

    def leak(path: LeakPath, text: str) -> dict[str, Any]:
        return {"path": text,
                "frames": [{"function": functions[f.function].name, "signature": functions[f.function].full_name,
                            "file": f.file, "line": f.line} for f in reversed(path.frames)],
                "kind": path.kind, "kept_objects": path.objects, "kept_bytes": path.kept, "runtime": path.runtime,
                # The chain's, all its kinds.
                "allocs": path.chain[0], "frees": path.chain[1], "bytes": path.chain[2]}

    every_leak = leak_paths(model, options.call_sites, runtime=True)
    leak_texts = [shown.text for shown in shown_leak_paths(model, every_leak, options.call_sites, None)]
    peaks, temporaries = list(peak_paths(model)), list(temporary_paths(model))
    callers = own_callers(model)
    one_process = len(model.runs) <= 1
    return {
        "runs": [asdict(run) for run in model.runs],
        "summary": summary,
        # The program's as the text's leak table lists them; what the C and
        # C++ runtimes keep on purpose apart, as --include-runtime marks it.
        "leaks": [leak(path, text) for path, text in zip(every_leak, leak_texts, strict=True) if not path.runtime],
        "runtime_kept": [leak(path, text) for path, text in zip(every_leak, leak_texts, strict=True) if path.runtime],
        "suppressed": [asdict(row) for row in model.suppressed],
        # memcheck's LEAK SUMMARY; None when no process was classified.
        "leak_summary": {row.kind: {"blocks": row.blocks, "bytes": row.bytes} for row in leak_summary.totals(model)}
        if leak_summary.classified(model) else None,
        # The peak is one process's: none for several.
        "peak": {"elapsed_seconds": model.summary.get("peak_ns", 0) / 1e9,
                 "allocation": model.summary.get("peak_allocs", 0),
                 "bytes": model.summary.get("max_live_bytes", 0),
                 "paths": [row | {"blocks": p.blocks, "bytes": p.bytes} for p, row in zip(peaks, wholes(peaks),
                                                                                          strict=True)]}
        if one_process else None,
        "temporaries": [row | {"temporaries": p.blocks} for p, row in zip(temporaries, wholes(temporaries),
                                                                            strict=True)],
        "bins": [{"size": b.size, "label": "> 1024" if b.size > 1024 else str(b.size), "allocs": b.allocs,
                  "frees": b.frees, "bytes": b.bytes, "kept_bytes": b.bytes - b.bytes_freed,
                  "temporaries": b.temporaries, "peak_blocks": b.peak_blocks, "peak_bytes": b.peak_bytes,
                  "types": bin_types(b)} for b in model.bins],
        # via: for an allocator that is not the program's own code, the
        # program's functions it allocated for (tables.own_callers).
        "direct": [{"function": model.label(f.id), "signature": f.full_name, "module": f.module,
                    "calls": f.self_calls,
                    "via": [{"function": functions[via.function].name, "bytes": via.bytes}
                            for via in callers.get(f.id, [])],
                    "bytes": sum(f.self_bytes), "bytes_by_class": _by_class(f.self_bytes),
                    "kept_bytes": sum(f.kept_bytes), "kept_by_class": _by_class(f.kept_bytes),
                    "kept_objects": f.kept_objects}
                   for f in allocators(model)],
        "call_graph": [{"function": model.label(f.id), "signature": f.full_name, "module": f.module,
                        "file": f.file, "cycle": f.cycle,
                        "self_bytes": sum(f.self_bytes), "self_by_class": _by_class(f.self_bytes),
                        "total_bytes": f.total_bytes, "called": f.called, "recursive_calls": f.recursive_calls,
                        "callers": [{"function": model.label(e.caller), "calls": e.calls, "bytes": sum(e.bytes),
                                     "bytes_by_class": _by_class(e.bytes)} for e in model.callers.get(f.id, [])],
                        "callees": [{"function": model.label(e.callee), "calls": e.calls, "bytes": sum(e.bytes),
                                     "bytes_by_class": _by_class(e.bytes)} for e in model.callees.get(f.id, [])]}
                       for f in sorted(functions.values(), key=lambda f: (-f.total_bytes, f.full_name))]
        if model.call_graph else [],
        "cycles": [{"number": c.number, "members": [functions[m].name for m in c.members],
                    "self_bytes": c.self_bytes, "total_bytes": c.total_bytes, "called": c.called,
                    "internal_calls": c.internal_calls} for c in model.cycles.values()],
    }
