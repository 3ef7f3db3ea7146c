"""mprof diff --format json: the totals and every view's changed rows, each
measure's base, new and change, in the text's order."""

from __future__ import annotations

from typing import Any, cast

from ..report.model import Model
from ..report.tables import NO_CHAIN
from .compare import Comparison, FunctionKey, Row
from .text import Options, shown


def _runs(model: Model) -> list[dict[str, Any]]:
    return [{"pid": run.pid, "program": run.program, "command_line": run.command_line} for run in model.runs]


def _figures(comparison: Comparison, row: Row) -> dict[str, dict[str, int]]:
    return {measure.name: {"base": row.base[index], "new": row.new[index], "change": row.change(index)}
            for index, measure in enumerate(comparison.measures)}


def _function(key: FunctionKey) -> dict[str, str]:
    return {"function": key[0], "module": key[1]}


def _identity(view: str, row: Row) -> dict[str, Any]:
    """What matched the row in both profiles, as fields."""
    if row.key == NO_CHAIN:
        return {"frames": []} if view == "paths" else {"function": NO_CHAIN, "module": ""}
    if view == "paths":
        return {"frames": [_function(key) for key in cast(tuple[FunctionKey, ...], row.key)]}
    if view == "sites":
        function, file, line = cast(tuple[FunctionKey, str, int], row.key)
        return {**_function(function), "file": file, "line": line}
    if view == "bins":
        return {"size": row.key, "larger": row.key == 1025}
    return _function(cast(FunctionKey, row.key))


def document(comparison: Comparison, options: Options) -> dict[str, Any]:
    result: dict[str, Any] = {
        "base": {"runs": _runs(comparison.base)},
        "new": {"runs": _runs(comparison.new)},
        "sort": options.sort,
        "totals": _figures(comparison, comparison.totals),
    }
    for view in comparison.views:
        rows, changed = shown(comparison, view, options)
        result[view.name] = {
            "changed": changed,
            "rows": [{"label": row.label, **_identity(view.name, row), "status": row.status,
                      "figures": _figures(comparison, row)} for row in rows],
        }
    return result
