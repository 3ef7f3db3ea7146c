"""A measure as collapsed stacks, the text flamegraph.pl, inferno and
speedscope read: a line per call path, its function names outermost first
separated by ';', then a space and the path's count.

Paths that differ only in the lines of their calls are one line, as a
flame graph draws them; lines are sorted, as flamegraph.pl's input is."""

from __future__ import annotations

from ..report.measures import Measure
from ..report.model import Model
from ..report.tables import NO_CHAIN


def _frame_name(name: str) -> str:
    # ';' separates the frames and a line ends the path: neither may be in
    # a name.  The count is after the last space, so spaces may stay.
    return name.replace(";", ":").replace("\n", " ")


def collapsed(model: Model, measure: Measure) -> str:
    counted = [(path, count) for path in model.paths if (count := measure.of(path))]
    chains = model.tree.paths_functions(path.node for path, _ in counted if path.node is not None)
    names = {function_id: _frame_name(function.name) for function_id, function in model.functions.items()}
    counts: dict[str, int] = {}
    for path, count in counted:
        stack = ";".join(map(names.__getitem__, chains[path.node])) if path.node is not None else NO_CHAIN
        counts[stack] = counts.get(stack, 0) + count
    return "".join(f"{stack} {count}\n" for stack, count in sorted(counts.items()))
