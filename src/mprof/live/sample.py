"""One answer of the watched process, reduced: the whole program's figures
and each whole call path's (with its leak kinds, when the process
classified its blocks), keyed so that a path is the same path in every
sample (a reduction numbers its functions afresh)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..cli.inputs import profile_of_snapshot
from ..report.display import for_display
from ..report.model import Model


@dataclass(frozen=True)
class PathFigures:
    names: tuple[str, ...]  # the functions' whole names, outermost first: the key across samples
    functions: tuple[int, ...]  # the same functions in this sample's model
    allocs: int
    live_blocks: int
    live_bytes: int
    temporaries: int
    # Blocks and bytes of each leak kind, in mprof(5)'s LEAK order: all 0
    # unless the snapshot classified its live blocks.
    kinds: tuple[int, ...] = (0,) * 8


@dataclass(frozen=True)
class Sample:
    model: Model
    elapsed_ns: int  # the process's run time at the snapshot
    allocs: int
    live_blocks: int
    live_bytes: int
    peak_bytes: int
    peak_ns: int  # when the live bytes reached the peak, from the start
    timeline: tuple[tuple[int, int, int, int, int], ...]  # (ns, live bytes, live blocks, resident, mapped bytes)
    paths: dict[tuple[str, ...], PathFigures]
    warnings: list[str]
    classified: bool = False  # whether the process classified its live blocks (a LEAK section)


def take(path: Path) -> Sample:
    model, warnings = profile_of_snapshot(path)
    model = for_display(model)  # names printable and short, as every report shows them
    run = model.runs[0]
    summary = model.summary
    groups = model.tree.by_functions()
    chains = model.tree.paths_functions(group[4] for group in groups if group[4] is not None)
    paths: dict[tuple[str, ...], PathFigures] = {}
    for allocs, live_blocks, live_bytes, temporaries, node, *kinds in groups:
        functions = chains[node] if node is not None else ()
        names = tuple(model.functions[function].full_name for function in functions)
        known = paths.get(names)
        if known:  # two functions of one name (static ones in two files): one row, as the names read
            allocs += known.allocs
            live_blocks += known.live_blocks
            live_bytes += known.live_bytes
            temporaries += known.temporaries
            functions = known.functions
            kinds = [mine + theirs for mine, theirs in zip(kinds, known.kinds, strict=True)]
        paths[names] = PathFigures(names, functions, allocs, live_blocks, live_bytes, temporaries, tuple(kinds))
    return Sample(model=model, elapsed_ns=run.elapsed_ns, allocs=summary["allocs"],
                  live_blocks=summary["allocs"] - summary["frees"],
                  live_bytes=summary["bytes_allocated"] - summary["bytes_freed"],
                  peak_bytes=summary.get("max_live_bytes", 0), peak_ns=summary.get("peak_ns", 0),
                  timeline=run.timeline, paths=paths, warnings=warnings, classified=run.scan is not None)
