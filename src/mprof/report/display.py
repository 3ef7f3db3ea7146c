"""The model as every report shows it: each name from the program's world
made printable (reducer/escape.py), C++ and Rust names short, Rust's
without hash or crate disambiguators, unless asked for in full (names.py)."""

from __future__ import annotations

import dataclasses

from ..reducer.escape import printable
from .model import FunctionRow, Model
from .names import readable_names, short_name


def for_display(model: Model, full_names: bool = False) -> Model:
    """The model with every name made printable, for every report; each
    function's name short (names.readable_names) unless full_names."""
    signatures = {key: printable(row.full_name) for key, row in model.functions.items()}
    names = signatures if full_names else readable_names(signatures)
    shorts = names if full_names else {key: short_name(signature) for key, signature in signatures.items()}
    # A big program's functions are in a few modules and files.
    places = {text: printable(text) for row in model.functions.values() for text in (row.module, row.file)}
    # Made whole, not by dataclasses.replace, which takes several times as long.
    functions = {key: FunctionRow(row.id, names[key], places[row.module], places[row.file], row.line, row.cycle,
                                  row.self_calls, row.self_bytes, row.kept_bytes, row.kept_objects, row.total_bytes,
                                  row.called, row.recursive_calls, signatures[key], shorts[key])
                 for key, row in model.functions.items()}
    runs = [dataclasses.replace(run, program=printable(run.program), command_line=printable(run.command_line))
            for run in model.runs]
    bins = [dataclasses.replace(row, types=printable(row.types)) for row in model.bins]
    return dataclasses.replace(model, functions=functions, runs=runs, bins=bins)
