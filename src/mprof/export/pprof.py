"""A profile as pprof reads it: perftools.profiles.Profile (google/pprof's
published profile.proto, compiled by set-up into profile_pb2), gzipped.

One sample per whole call path with a value for each measure; a location
per return address, holding the frame's function and those inlined into
it, innermost first, as pprof models inlining; functions named as the
reports name them, with the whole demangled signature as system name."""

from __future__ import annotations

import array
import gzip
import json
import os
from dataclasses import dataclass

from ..reducer.errors import MprofError
from ..report.measures import Measure
from ..report.model import Model
from ..report.tables import NO_CHAIN
from . import export_core

try:
    from . import profile_pb2
except ImportError:  # set-up has not generated it yet
    profile_pb2 = None  # type: ignore[assignment]


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


@dataclass(frozen=True)
class Interval:
    """A profile of part of a run (a pushed interval's): its figures, which
    no measure reads off a path alone, and when it was taken.  Counted as
    Go's heap profiles are, per byte of space, every block: a period of 1."""
    # ("q") each path's figure of each measure, in model.paths's order; None:
    # as the measures read them off the paths
    values: array.array[int] | None
    time_ns: int  # its end, in ns since the epoch
    duration_ns: int


def profile(model: Model, chosen: tuple[Measure, ...], default: str, interval: Interval | None = None) -> bytes:
    """The gzipped profile of model's paths, a sample type per measure: the
    whole run's, or interval's."""
    if profile_pb2 is None:
        raise MprofError("mprof export --format pprof needs the module set-up generates from pprof's "
                         "profile.proto: run `make venv`")
    result = profile_pb2.Profile()
    strings = _Strings(result.string_table)  # type: ignore[arg-type]
    for measure in chosen:
        sample_type = result.sample_type.add()
        sample_type.type = strings(measure.name)
        sample_type.unit = strings(measure.unit)
    result.default_sample_type = strings(default)

    mappings: dict[str, int] = {}

    def mapping_of(module: str) -> int:
        if module not in mappings:
            mapping = result.mapping.add()
            mapping.id = mappings[module] = len(mappings) + 1
            mapping.filename = strings(module)
            mapping.has_functions = mapping.has_filenames = True
            mapping.has_line_numbers = mapping.has_inline_frames = True
        return mappings[module]

    # pprof takes the first mapping for the program's: the executable's
    # before any library a path reaches first.
    for run in model.runs:
        mapping_of(run.program)

    # The walk in C numbers the samples' locations and functions; here they
    # are named, strings numbered in the order the walk met them.
    walk = export_core.PprofWalk(model, chosen, None if interval is None else interval.values)
    # A server makes a series of each sample label's value: an interval's
    # samples carry none, so that a service stays one series.
    labels = _labels(model, walk) if interval is None else {}
    label_places = sorted(labels)
    label_arrays = (array.array("Q"), array.array("q"), array.array("q"))
    next_label = 0

    def label_paths_before(place: int) -> None:
        nonlocal next_label
        while next_label < len(label_places) and label_places[next_label] < place:
            path = label_places[next_label]
            for key, value in labels[path]:
                label_arrays[0].append(path)
                label_arrays[1].append(strings(key))
                label_arrays[2].append(strings(value))
            next_label += 1

    functions = (array.array("q"), array.array("q"), array.array("q"), array.array("q"))
    name, system_name, filename, start_line = functions
    location_mappings = array.array("Q")
    rows = model.functions
    for kind, function_id, place in zip(walk.event_kinds, walk.event_functions, walk.event_paths, strict=True):
        label_paths_before(place)
        if kind == export_core.EX_FUNCTION:
            row = rows[function_id]
            name.append(strings(row.name))
            system_name.append(strings(row.full_name))
            filename.append(strings(row.file))
            start_line.append(row.line)
        elif kind == export_core.EX_LOCATION:
            location_mappings.append(mapping_of(rows[function_id].module))
        else:
            no_chain = strings(NO_CHAIN)
            name.append(no_chain)
            system_name.append(no_chain)
            filename.append(0)
            start_line.append(0)
            location_mappings.append(0)
    label_paths_before(len(walk.counted))

    if interval is not None:
        result.time_nanos, result.duration_nanos = interval.time_ns, interval.duration_ns
        result.period_type.type, result.period_type.unit = strings("space"), strings("bytes")
        result.period = 1
    else:
        if model.runs:
            result.time_nanos = min(run.start_unix_ns for run in model.runs)
        result.duration_nanos = model.summary.get("elapsed_ns", 0)
    for run in model.runs:
        result.comment.append(strings(f"pid {run.pid}: {run.command_line or os.path.basename(run.program)}"))
    # Protobuf reads concatenated messages as one, repeated fields appended:
    # the samples, locations and functions come encoded from the walk.
    encoded = walk.encode(functions, location_mappings, label_arrays)
    # Level 1: a ninth of level 9's time on a big profile, for a file a
    # quarter bigger.
    return gzip.compress(b"".join((result.SerializeToString(), *encoded)), compresslevel=1, mtime=0)


def _labels(model: Model, walk: export_core.PprofWalk) -> dict[int, list[tuple[str, str]]]:
    """The labels of the samples that have any, by their paths' places:
    the runtime that keeps the path's blocks, the suppression that took
    them."""
    found: dict[int, list[tuple[str, str]]] = {}
    if len(walk.runtime_rowids):
        runtimes = dict(model.tree.db.execute("SELECT rowid, runtime FROM paths WHERE rowid IN "
                                              "(SELECT value FROM json_each(?))",
                                              (json.dumps(walk.runtime_rowids.tolist()),)))
        for place, rowid in zip(walk.runtime_paths, walk.runtime_rowids, strict=True):
            found[place] = [("runtime", runtimes[rowid])]
    for place, pattern in model.path_suppressions.items():
        if pattern and walk.counted[place]:
            found.setdefault(place, []).append(("suppressed", pattern))
    return found
