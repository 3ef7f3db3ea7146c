"""The HTML page's peak table as mprof made it in Python before
libmprof-reduce's page.c: each path's functions walked up the tree a node
at a time, folded by reference_folding.py, and each row a Python object
encoded as the tojson filter does.  Kept for test_page_rows.py to compare
the library's JSON with; nothing here is used by mprof itself."""

from __future__ import annotations

import json
from typing import Any

from jinja2.utils import htmlsafe_json_dumps

import reference_folding
from mprof.report import folding, tables
from mprof.report.model import Model


def _chain(model: Model, node: int | None) -> tuple[int, ...]:
    parents, functions = model.tree.parents(), model.tree.functions_of_nodes()
    found = []
    while node is not None:
        found.append(functions[node])
        node = parents[node]
    return tuple(reversed(found))


def _path_cell(elements: tuple[folding.Element, ...], partial: bool, short: bool, parts_of: list[int]) -> list[Any]:
    shown: list[Any] = []
    at = 0
    for element in elements:
        if isinstance(element, folding.Fold):
            count = len(element.frames)
            shown.append({"fold": parts_of[at:at + count], "t": element.label})
            at += count
        else:
            shown.append(parts_of[at])
            at += 1
    cell: dict[str, Any] = {"p": shown}
    if partial:
        cell["z"] = 1
    if short:
        cell["s"] = 1
    return [cell]


def peak_rows(model: Model) -> str:
    """blocks, bytes, (%), path of each peak row, as the page's JSON."""
    peak = model.summary.get("max_live_bytes", 0)
    paths = tables.peak_paths(model)
    chains = [_chain(model, node) for node in paths.nodes()]
    own = folding.OwnCode(model)
    # A path names its functions short unless its text so named is another path's of other functions.
    texts = [" > ".join(model.functions[function].path_name for function in chain) for chain in chains]
    chains_of: dict[str, set[tuple[int, ...]]] = {}
    for text, chain in zip(texts, chains, strict=True):
        chains_of.setdefault(text, set()).add(chain)
    short = [len(chains_of[text]) == 1 for text in texts]
    shown = reference_folding.fold_paths(
        [[(own.short_frame if short[n] else own.named_frame)(function) for function in chain]
         for n, chain in enumerate(chains)], [tables._partial(model, chain) for chain in chains], tables.PATH_WIDTH)
    rows = []
    for n, (blocks, size, chain, path) in enumerate(zip(paths.column(0), paths.column(1), chains, shown,
                                                        strict=True)):
        cell = _path_cell(path.elements, path.partial, short[n], list(chain)) if chain else [tables.NO_CHAIN]
        rows.append({"c": [f"{blocks:,}", f"{size:,}", tables.parenthesised(size, peak), cell]})
    return str(htmlsafe_json_dumps(rows, dumps=json.dumps, sort_keys=False, separators=(",", ":")))
