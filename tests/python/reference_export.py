"""mprof export's formats as mprof made them in Python before
libmprof-reduce's export.c: the pprof profile (not gzipped) and the
collapsed stacks, kept verbatim for test_export_walk.py to compare the
library's with.  Nothing here is used by mprof itself."""

from __future__ import annotations

import os

from mprof.export import profile_pb2
from mprof.report.measures import Measure
from mprof.report.model import Model
from mprof.report.tables import NO_CHAIN


class _Strings:
    """pprof's string table: index 0 is always the empty string."""

    def __init__(self, table: list[str]) -> None:
        self.table = table
        self.index: dict[str, int] = {}
        self("")

    def __call__(self, text: str) -> int:
        found = self.index.get(text)
        if found is None:
            found = self.index[text] = len(self.table)
            self.table.append(text)
        return found


def _labels(strings: _Strings, sample: profile_pb2.Sample, pairs: list[tuple[str, str]]) -> None:
    for key, value in pairs:
        if value:
            label = sample.label.add()
            label.key = strings(key)
            label.str = strings(value)


def profile(model: Model, chosen: tuple[Measure, ...], default: str) -> bytes:
    """The profile of model's paths, a sample type per measure, not gzipped."""
    result = profile_pb2.Profile()
    strings = _Strings(result.string_table)  # type: ignore[arg-type]
    for measure in chosen:
        sample_type = result.sample_type.add()
        sample_type.type = strings(measure.name)
        sample_type.unit = strings(measure.unit)
    result.default_sample_type = strings(default)

    mappings: dict[str, int] = {}
    functions: dict[int, int] = {}
    locations: dict[tuple[tuple[int, int], ...], int] = {}

    def mapping_of(module: str) -> int:
        if module not in mappings:
            mapping = result.mapping.add()
            mapping.id = mappings[module] = len(mappings) + 1
            mapping.filename = strings(module)
            mapping.has_functions = mapping.has_filenames = True
            mapping.has_line_numbers = mapping.has_inline_frames = True
        return mappings[module]

    def function_of(function_id: int) -> int:
        if function_id not in functions:
            row = model.functions[function_id]
            function = result.function.add()
            function.id = functions[function_id] = len(functions) + 1
            function.name = strings(row.name)
            function.system_name = strings(row.full_name)
            function.filename = strings(row.file)
            function.start_line = row.line
        return functions[function_id]

    def location_of(group: list[tuple[int, int]]) -> int:
        """A machine frame's location: its (function, line) pairs, innermost first."""
        lines = tuple((function_of(function), line) for function, line in group)
        if lines not in locations:
            location = result.location.add()
            location.id = locations[lines] = len(locations) + 1
            location.mapping_id = mapping_of(model.functions[group[-1][0]].module)
            for function_id, line_number in lines:
                line = location.line.add()
                line.function_id = function_id
                line.line = line_number
        return locations[lines]

    # A path's locations, from a machine frame's innermost node up: each
    # node's worked out once, the paths above it shared.
    tree = model.tree
    parents, node_functions, node_lines = tree.parents(), tree.functions_of_nodes(), tree.lines()
    above: dict[int | None, tuple[int, ...]] = {None: ()}

    def locations_of(node: int) -> tuple[int, ...]:
        starts: list[int] = []
        found: list[int] = []
        start: int | None = node
        while start not in above:
            assert start is not None
            group = []
            at: int | None = start
            while at is not None:
                line, inlined = node_lines[at]
                group.append((node_functions[at], line))
                if not inlined:
                    at = parents[at]
                    break
                at = parents[at]
            starts.append(start)
            found.append(location_of(group))
            start = at
        known = above[start]
        for start, location_id in zip(reversed(starts), reversed(found), strict=True):
            known = above[start] = (location_id, *known)
        return known

    # pprof takes the first mapping for the program's: the executable's
    # before any library a path reaches first.
    for run in model.runs:
        mapping_of(run.program)
    no_chain = 0
    for path in model.paths:
        values = [measure.of(path) for measure in chosen]
        if not any(values):
            continue
        sample = result.sample.add()
        sample.value.extend(values)
        if path.node is None:
            if not no_chain:
                location = result.location.add()
                location.id = no_chain = len(locations) + 1
                locations[()] = no_chain
                function = result.function.add()
                function.id = len(functions) + 1
                functions[0] = function.id
                function.name = function.system_name = strings(NO_CHAIN)
                location.line.add().function_id = function.id
            sample.location_id.append(no_chain)
        else:
            sample.location_id.extend(locations_of(path.node))
        _labels(strings, sample, [("runtime", path.runtime), ("suppressed", path.suppressed)])

    if model.runs:
        result.time_nanos = min(run.start_unix_ns for run in model.runs)
    result.duration_nanos = model.summary.get("elapsed_ns", 0)
    for run in model.runs:
        result.comment.append(strings(f"pid {run.pid}: {run.command_line or os.path.basename(run.program)}"))
    return result.SerializeToString()


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
