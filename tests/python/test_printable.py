"""Names from the program's world made safe for a terminal, section tags
named in messages, and every name of a model passed through both before a
report shows it."""

from __future__ import annotations

import pytest

from mprof.reducer.escape import printable
from mprof.reducer.format import tag_name
from mprof.report.display import for_display
from mprof.report.model import BinRow, FunctionRow, Model, RunInfo


@pytest.mark.parametrize(("text", "shown"), [
    ("plain name, é, 名前", "plain name, é, 名前"),
    ("a\\b", "a\\\\b"),  # a backslash is doubled, so no name reads like an escape
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("tab\there\nnext", "tab\\x09here\\x0anext"),
    ("\x7f\x85", "\\x7f\\x85"),  # DEL and NEL are control characters too
    ("\udc80\udcff", "\\x80\\xff"),  # bytes that were not UTF-8, kept by surrogateescape
    ("\udc7f\udd00", "\udc7f\udd00"),  # other lone surrogates are not bytes: left alone
    ("no\u00a0break", "no\u00a0break"),  # not printable to Python, but not a control character
])
def test_printable(text: str, shown: str) -> None:
    assert printable(text) == shown


@pytest.mark.parametrize(("tag", "name"), [
    (b"SUMM", "SUMM"), (b"AB  ", "AB"), (b"ABXX", "ABXX"), (b"~~~~", "~~~~"), (b"    ", "'    '"),
    (b"\x01\x02\x03\x04", "0x04030201"), (b"AB\x7f ", "0x207f4241"), (b"AB\x1f ", "0x201f4241")])
def test_tag_names_in_messages(tag: bytes, name: str) -> None:
    assert tag_name(tag) == name


def test_every_name_of_a_model_is_made_printable() -> None:
    function = FunctionRow(1, "f\x1b", "lib\\x.so", "src/\x07.c", 3, None, 1, (8, 0, 0, 0), (0, 0, 0, 0), 0, 8, 1, 0)
    run = RunInfo(1, 0, "/bin/p\udcff", "p \x1b[2J", 1, True, True, False, 0, False, 5)
    model = Model([run], {}, {1: function}, [], {}, [BinRow(8, 1, 0, 8, 0, "struct \x1b")], [])
    shown = for_display(model)
    assert [(f.name, f.module, f.file) for f in shown.functions.values()] == [("f\\x1b", "lib\\\\x.so", "src/\\x07.c")]
    assert [(r.program, r.command_line) for r in shown.runs] == [("/bin/p\\xff", "p \\x1b[2J")]
    assert [b.types for b in shown.bins] == ["struct \\x1b"]
    # The figures are the model's own.
    assert shown.functions[1].total_bytes == 8 and shown.bins[0].bytes == 8
