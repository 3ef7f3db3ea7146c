"""Profiles made by hand for the report tests: data files recorded from
call chains given as addresses, reduced in the test's process with the
symbol resolver replaced by a table of names, and reported through the
command line's main()."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from datafile_builder import SUMMARY_FIELDS, DataFileBuilder
from mprof.cli.main import main
from mprof.reducer import profile as profile_module
from mprof.reducer.symbolize import Frame, WarningSink


class NamedFrames:
    """Stands in for symbolize.Resolver: each address is one frame of the
    function function_of names, in prog.c; the program has three types."""
    function_of: Mapping[int, str] = {}
    line_of: Mapping[int, int] = {}

    def __init__(self, modules: object, warnings: WarningSink) -> None:
        self.without_debug: set[str] = set()  # every module has DWARF
        self.without_symbols: set[str] = set()

    def __enter__(self) -> NamedFrames:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def resolve(self, addresses: Iterable[int], progress: object = None) -> dict[int, list[Frame]]:
        return {a: [Frame(self.function_of[a], "prog.c", self.line_of.get(a, 1), "/bin/prog", a, False)]
                for a in addresses}

    def types(self, module_path: str) -> list[tuple[int, str]]:
        return [(40, "struct node"), (40, "pair_t"), (3000, "struct big")]


def resolve_by_name(monkeypatch: pytest.MonkeyPatch, function_of: Mapping[int, str]) -> None:
    """Puts in the resolver's place one where each address is one frame of
    the function function_of names, in prog.c."""
    monkeypatch.setattr(profile_module, "Resolver", type("ByName", (NamedFrames,), {"function_of": function_of}))


def size_class(size: int) -> int:
    return 0 if size <= 32 else 1 if size <= 256 else 2 if size <= 2048 else 3


def by_class(size: int, total: int) -> tuple[int, int, int, int]:
    figures = [0, 0, 0, 0]
    figures[size_class(size)] = total
    return (figures[0], figures[1], figures[2], figures[3])


def recorded(chains: Iterable[tuple[tuple[int, ...], int, int, int]], **fields: object) -> DataFileBuilder:
    """Chains (addresses outermost first, size, blocks, blocks freed) as the
    monitor records them: a path per distinct chain (the same chain twice
    adds up), a bin per size, and the summary's allocations and frees;
    fields then set as given."""
    paths: dict[tuple[int, ...], list] = {}
    bins: dict[int, list[int]] = {}
    summary = [0] * SUMMARY_FIELDS
    for chain, size, blocks, freed in chains:
        path = paths.setdefault(tuple(reversed(chain)), [0, 0, [0] * 4, [0] * 4])
        path[0] += blocks
        path[1] += freed
        path[2][size_class(size)] += size * blocks
        path[3][size_class(size)] += size * freed
        row = bins.setdefault(min(size, 1025), [0] * 4)  # one bin above 1024
        for n, figure in enumerate((blocks, freed, size * blocks, size * freed)):  # allocs, frees, bytes, freed
            row[n] += figure
            summary[n] += figure
    builder = DataFileBuilder(
        leak_depth=5, exe=b"/bin/prog", summary=summary, bins=[(size, *row) for size, row in sorted(bins.items())],
        paths=[(addrs, allocs, frees, tuple(b), tuple(f)) for addrs, (allocs, frees, b, f) in paths.items()])
    for name, value in fields.items():
        setattr(builder, name, value)
    return builder


def report(capsys: pytest.CaptureFixture[str], *arguments: str | Path) -> str:
    assert main([str(argument) for argument in arguments]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def embedded(page: str, script_id: str) -> Any:
    """A JSON block the page carries for its script (controls.html)."""
    opening = f'<script type="application/json" id="{script_id}">'
    start = page.index(opening) + len(opening)
    return json.loads(page[start:page.index("</script>", start)])


def cell_text(page: str) -> Callable[[object], str]:
    """A cell of the HTML page's rows as the text tables print it: a
    function by its name, with its cycle for a label, and [index] in the
    call graph (the page's functions table, [id, name, label, index,
    signature, short name]), in a path named short ("s") by its short
    name; folded frames opened, as a click opens them."""
    functions = {row[0]: row for row in embedded(page, "functions")}

    def text(cell: object, short: bool = False) -> str:
        if isinstance(cell, str):
            return cell
        if isinstance(cell, list):
            return "".join(text(part, short) for part in cell)
        if isinstance(cell, int):  # a function by its id alone
            cell = {"f": cell}
        assert isinstance(cell, dict)
        if "p" in cell:  # a path: its elements joined by " > ", after "... > " when partial
            return ("... > " if cell.get("z") else "") + " > ".join(text(element, bool(cell.get("s")))
                                                                   for element in cell["p"])
        if "fold" in cell:
            return " > ".join(text(part, short) for part in cell["fold"])
        if "t" in cell:
            return str(cell["t"])
        _, name, label, index, _, short_name = functions[cell["f"]]
        view = cell.get("v", "")
        if view == "l":
            return str(label or name)
        if view == "g":
            return f"{label or name} [{index}]"
        return str(short_name or name) if short else str(name)

    return lambda cell: text(cell).strip()


def page_rows(page: str, table: str) -> list[list[str]]:
    """One table's rows as the page's script gets them, then its <total>
    line as the page prints it (the leak and peak tables and the call graph
    have none)."""
    text = cell_text(page)
    rows = [[text(cell) for cell in row["c"]] for row in embedded(page, f"rows-{table}")]
    footer = re.search(f'id="table-{table}"(?:(?!</table>).)*<tfoot><tr>(.*?)</tr></tfoot>', page, re.DOTALL)
    if footer:
        rows.append([html.unescape(cell) for cell in re.findall("<td>(.*?)</td>", footer.group(1))])
    return rows
