"""A measure as collapsed stacks, the text flamegraph.pl, inferno and
speedscope read: a line per call path, its function names outermost first
separated by ';', then a space and the path's count.

Paths that differ only in the lines of their calls are one line, as a
flame graph draws them; lines are sorted, as flamegraph.pl's input is."""

from __future__ import annotations

import array

from ..report.measures import Measure
from ..report.model import Model
from ..report.tables import NO_CHAIN
from . import export_core


def _frame_name(name: str) -> bytes:
    # ';' separates the frames and a line ends the path: neither may be in
    # a name.  The count is after the last space, so spaces may stay.
    return name.replace(";", ":").replace("\n", " ").encode("utf-8", "surrogateescape")


def collapsed(model: Model, measure: Measure) -> bytes:
    """The file's bytes, its lines in the order of their bytes: the order
    of their text, as names for display hold no undecodable byte
    (display.for_display)."""
    named = {function_id: _frame_name(function.name) for function_id, function in model.functions.items()}
    no_chain = NO_CHAIN.encode()
    names = sorted({*named.values(), no_chain})
    place = {name: n for n, name in enumerate(names)}
    function_ids = array.array("q", sorted(named))
    name_of = array.array("I", [place[named[function_id]] for function_id in function_ids])
    return export_core.collapsed(model, measure, function_ids, name_of, names, place[no_chain])
