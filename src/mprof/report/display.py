"""The model as every report shows it: each name from the program's world
made printable (reducer/escape.py)."""

from __future__ import annotations

import dataclasses

from ..reducer.escape import printable
from .model import Model


def for_display(model: Model) -> Model:
    """The model with every name made printable, for every report."""
    functions = {key: dataclasses.replace(row, name=printable(row.name), module=printable(row.module),
                                          file=printable(row.file))
                 for key, row in model.functions.items()}
    runs = [dataclasses.replace(run, program=printable(run.program), command_line=printable(run.command_line))
            for run in model.runs]
    bins = [dataclasses.replace(row, types=printable(row.types)) for row in model.bins]
    return dataclasses.replace(model, functions=functions, runs=runs, bins=bins)
