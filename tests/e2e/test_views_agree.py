"""One real C++ program's profile in every view: GCC's C++ compiler proper
(cc1plus, which nobody here wrote) compiling a file that includes <map>,
<string>, <vector> and <algorithm>.  The default text report (its first
screen), the text report with --wide --all, JSON and the HTML page's rows
must hold the same rows with the same figures, in the same order: no
figure may depend on how a table is displayed.  cc1plus keeps most of what
it has at exit reachable: the leak rows are compared with every kind
listed (--leak-kinds all), the default first screen listing what memcheck
calls lost."""

from __future__ import annotations

import json
import re

import pytest

from e2e_support import mprof, table

pytestmark = pytest.mark.slow

SOURCE = """\
#include <algorithm>
#include <map>
#include <string>
#include <vector>
int count(const std::vector<std::string> &words) {
    std::map<std::string, int> seen;
    for (const auto &word : words) ++seen[word];
    return std::count_if(seen.begin(), seen.end(), [](const auto &entry) { return entry.second > 1; });
}
"""


@pytest.fixture(scope="module")
def views(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    directory = tmp_path_factory.mktemp("cc1plus")
    source = directory / "count.cc"
    source.write_text(SOURCE)
    mprof("run", "--quiet", "-o", directory / "g++.mprof", "--", "g++", "-O2", "-c", source, "-o",
          directory / "count.o")
    files = sorted(directory.glob("g++.mprof*"))
    chosen = ("--program", "cc1plus", *files)
    every_kind = ("--leak-kinds", "all")
    page = directory / "count.html"
    mprof("html", *every_kind, *chosen, "-o", page)
    text = page.read_text()

    def embedded(name: str) -> list:  # type: ignore[type-arg]
        return json.loads(re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', text,
                                    re.DOTALL)[1])  # type: ignore[index]

    return {"first": mprof("report", *chosen).stdout, "every kind": mprof("report", *every_kind, *chosen).stdout,
            "all": mprof("report", "--wide", "--all", *every_kind, *chosen).stdout,
            "json": json.loads(mprof("report", "--format", "json", *chosen).stdout),
            "functions": {row[0]: row for row in embedded("functions")},
            **{f"html-{name}": embedded(f"rows-{name}") for name in ("leaks", "bins", "direct", "graph")}}


FIGURE = r"[\d,]+"
KIND = "definitely lost|indirectly lost|possibly lost|still reachable"
LEAK_ROW = re.compile(rf"\s*({FIGURE}) +({FIGURE}) +(\(\d+\))?  ({KIND}) +(.*)")
DIRECT_ROW = re.compile(r"(.{5}) (.{13}) (.{15})   (.{13}) (.{15})   (.{10})  (.*)")
BIN_ROW = re.compile(r"(.{7}) (.{10}) (.{13}) (.{5}) (.{10}) (.{13}) (.{5})(?:  (.*))?")
# index, self+desc, self, (%), s m l x, (frac: blank), called, name [index]
ENTRY_LINE = re.compile(r"(\[\d+\] *) (.{9}) (.{13}) (.{5})  (.{15})  (.{15})  (.{17})  (.*) \[\d+\]")


def rows(text: str, heading: str, pattern: re.Pattern[str]) -> list[tuple[str, ...]]:
    """A table's rows as their cells, stripped; not the footer lines."""
    matched = [pattern.fullmatch(row.ljust(120)) or pattern.fullmatch(row) for row in table(text, heading)]
    return [tuple((cell or "").strip() for cell in match.groups()) for match in matched if match]


def figure(text: str) -> int:
    return int(text.replace(",", ""))


FOLD = re.compile(r"\[(\d+) [^]]+\]")


def unfolds_to(shown: str, whole: str) -> bool:
    """Whether a folded path is the whole one with runs of frames replaced
    by "[N ...]" elements of N frames each."""
    frames = whole.split(" > ")
    at = 0
    for element in shown.split(" > "):
        fold = FOLD.fullmatch(element)
        if fold:
            at += int(fold[1])
        elif at < len(frames) and frames[at] == element:
            at += 1
        else:
            return False
    return at == len(frames)


def test_the_first_screens(views: dict) -> None:  # type: ignore[type-arg]
    # Thousands of rows in all; a few screens by default, each table saying
    # what it left out.
    assert len(views["all"].splitlines()) > 20_000
    assert len(views["first"].splitlines()) < 320
    # By default the leak table lists what is lost, all of it: cc1plus loses
    # one block, as memcheck says (valgrind 3.19, Debian 12's GCC 12: 7 bytes
    # in 1 blocks definitely lost, from register_include_chains' xstrdup),
    # and counts the other kinds on lines of their own (memcheck: 48,192
    # bytes in 6 blocks possibly lost; cc1plus's own tables differ from run
    # to run, and one of these buffers may be pointed to at its start); the
    # other five tables cut as before.
    first = views["first"].splitlines()
    assert sum(" rows left out: --all shows every row, " in line for line in first) == 5
    assert rows(views["first"], "Memory leak table", LEAK_ROW) == [
        ("1", "7", "", "definitely lost",
         "... > toplev::main > c_common_post_options > register_include_chains > xstrdup > xmalloc")]
    counted = [line.strip().split(", not listed: ")[0] for line in table(views["first"], "Memory leak table")
               if ", not listed: " in line]
    assert counted == ["Possibly lost", "Still reachable", "Kept on purpose by the C and C++ runtimes until exit"]
    # Every kind listed, the leak table cuts its rows as the others.
    every_kind = views["every kind"].splitlines()
    assert sum(" rows left out: --all shows every row, " in line for line in every_kind) == 6


def test_leak_rows(views: dict) -> None:  # type: ignore[type-arg]
    # JSON gives every kept path with its kind; the text and the page list
    # them all with --leak-kinds all, by default the lost alone.
    expected = [(f"{leak['kept_objects']:,}", f"{leak['kept_bytes']:,}", leak["kind"], leak["path"])
                for leak in views["json"]["leaks"] if not leak["runtime"]]
    assert len(expected) > 100
    everything = rows(views["all"], "Memory leak table", LEAK_ROW)
    assert [(objects, kept, kind, path) for objects, kept, _, kind, path in everything] == expected
    lost = [row for row in expected if row[2] in ("definitely lost", "indirectly lost")]
    assert [(objects, kept, kind, path) for objects, kept, _, kind, path in
            rows(views["first"], "Memory leak table", LEAK_ROW)] == lost
    first = rows(views["every kind"], "Memory leak table", LEAK_ROW)
    assert 10 <= len(first) <= 20 and [row[:4] for row in first] == [row[:4] for row in everything[:len(first)]]
    for (*_, shown), (*_, whole) in zip(first, expected, strict=False):
        # Shortened, a path folds runs of whole frames, never figures.
        assert unfolds_to(shown, whole), (shown, whole)
    functions = views["functions"]

    def text(part: object, short: bool = False) -> str:
        if isinstance(part, str):
            return part
        if isinstance(part, list):
            return "".join(text(element, short) for element in part)
        if isinstance(part, int):  # a function by its id alone
            part = {"f": part}
        assert isinstance(part, dict)
        if "p" in part:  # a path: its elements joined by " > ", after "... > " when partial; "s": named short
            return ("... > " if part.get("z") else "") + " > ".join(text(element, bool(part.get("s")))
                                                                   for element in part["p"])
        if "fold" in part:
            return " > ".join(text(element, short) for element in part["fold"])
        function = functions[part["f"]]
        return (function[5] or function[1]) if short else function[1]  # type: ignore[no-any-return]

    # The page folds long paths too; opened, they are whole; each ends in its kind, "  [still reachable]".
    page = []
    for row in views["html-leaks"]:
        path, kind = re.fullmatch(rf"(.*)  \[({KIND})\]", text(row["c"][3])).groups()  # type: ignore[union-attr]
        page.append((row["c"][0], row["c"][1], row["c"][2], kind, path))
    assert page == everything
    assert any("fold" in part for row in views["html-leaks"] if isinstance(row["c"][3][0], dict)
               for part in row["c"][3][0]["p"] if isinstance(part, dict))


def test_direct_rows(views: dict) -> None:  # type: ignore[type-arg]
    # A library allocator's row names the program's functions it allocated
    # for after its own name ("  (via NAME N%, ...)"), the first of them as
    # JSON's via has them.
    expected = [(f"{d['bytes']:,}", f"{d['kept_bytes']:,}", f"{d['calls']:,}", d["function"],
                 d["via"][0]["function"] if d["via"] else "") for d in views["json"]["direct"]]
    assert any(row[4] for row in expected)

    def direct(table: str) -> list[tuple[str, str, str, str, str]]:
        found = []
        for _, allocated, _, kept, _, calls, name in rows(views[table], "Direct allocation table", DIRECT_ROW)[1:]:
            function, _, via = name.partition("  (via ")
            found.append((allocated, kept, calls, function, via.split(" ")[0] if via else ""))
        return found

    everything = direct("all")  # after <total>
    assert everything == expected
    first = direct("first")
    assert first == expected[:len(first)]
    functions = views["functions"]

    def first_name(cell: object) -> str:
        part = cell[0] if isinstance(cell, list) else cell
        return functions[part["f"]][2] or functions[part["f"]][1]  # type: ignore[index]

    page = [(row["c"][1], row["c"][6], row["c"][11], first_name(row["c"][12])) for row in views["html-direct"]]
    assert page == [row[:4] for row in expected]


def test_bin_rows(views: dict) -> None:  # type: ignore[type-arg]
    expected = [(b["label"], f"{b['allocs']:,}", f"{b['bytes']:,}", f"{b['frees']:,}", f"{b['kept_bytes']:,}")
                for b in views["json"]["bins"]]
    everything = [(size, allocs, allocated, frees, kept) for size, allocs, allocated, _, frees, kept, _, _ in
                  rows(views["all"], "Allocation bin table", BIN_ROW)[:-1]]  # before <total>
    assert everything == expected
    first = [(size, allocs, allocated, frees, kept) for size, allocs, allocated, _, frees, kept, _, _ in
             rows(views["first"], "Allocation bin table", BIN_ROW)[:-1]]
    assert 10 <= len(first) <= 20 and set(first) < set(expected)
    # The first screen's bins are the largest, in the order of their sizes.
    largest = sorted(expected, key=lambda b: -figure(b[2]))[:len(first)]
    assert first == [b for b in expected if b in largest]
    page = [(row["c"][0], row["c"][1], row["c"][2], row["c"][4], row["c"][5]) for row in views["html-bins"]]
    assert page == expected


def test_call_graph_entries(views: dict) -> None:  # type: ignore[type-arg]
    # The shares are of the heap's bytes and of the regions cc1plus mapped
    # itself (its garbage collector's pages), rows of the graph too; it
    # unmaps none, so no region is counted twice by a split (mprof(1)).
    summary = views["json"]["summary"]
    assert summary["unmapped_bytes"] == 0 and summary["mapped_bytes"] > 0
    total = summary["bytes_allocated"] + summary["mapped_bytes"]
    expected = {e["function"]: (f"{e['total_bytes'] * 100 / total:.1f}", f"{e['self_bytes']:,}",
                                f"{e['called']:,}" + (f"+{e['recursive_calls']:,}" if e["recursive_calls"] else ""))
                for e in views["json"]["call_graph"]}

    def entries(text: str) -> list[tuple[str, str, str, str]]:
        """Each function's entry line: name, self+desc, self, called (not a
        cycle's <cycle N as a whole>)."""
        found = []
        for line in table(text, "Allocation call graph"):
            match = ENTRY_LINE.fullmatch(line)
            if match and not match[8].endswith(" as a whole>"):
                found.append((match[8], match[2].strip(), match[3].strip(), match[7].strip()))
        return found

    everything = entries(views["all"])
    assert len(everything) == len(expected) > 1000
    assert {name: figures for name, *figures in everything} == {name: list(f) for name, f in expected.items()}
    first = entries(views["first"])
    assert 10 <= len(first) <= 20 and first == everything[:len(first)]
    functions = views["functions"]
    page = {}
    for row in views["html-graph"]:
        cells = row["c"]
        if isinstance(cells[-1], list):  # a function's entry: its name, its cycle, [index]
            function = functions[cells[-1][0]["f"]]
            page[function[2] or function[1]] = (cells[1], cells[2], cells[12])
    assert page == expected
