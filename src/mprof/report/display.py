"""The model as every report shows it: each name from the program's world
made printable (reducer/escape.py), C++ and Rust names short, Rust's
without hash or crate disambiguators, unless asked for in full (names.py)."""

from __future__ import annotations

import dataclasses

from ..reducer.escape import printable
from .model import Model
from .names import readable_names


def for_display(model: Model, full_names: bool = False) -> Model:
    """The model with every name made printable, for every report; each
    function's name short (names.readable_names) unless full_names."""
    signatures = {key: printable(row.full_name) for key, row in model.functions.items()}
    names = signatures if full_names else readable_names(signatures)
    functions = {key: dataclasses.replace(
        row, name=names[key], signature=signatures[key], module=printable(row.module), file=printable(row.file))
        for key, row in model.functions.items()}
    runs = [dataclasses.replace(run, program=printable(run.program), command_line=printable(run.command_line))
            for run in model.runs]
    bins = [dataclasses.replace(row, types=printable(row.types)) for row in model.bins]
    return dataclasses.replace(model, functions=functions, runs=runs, bins=bins)
