"""LeakSanitizer's template matching and suppression files, case by case
from LSan's rules (sanitizer_common's TemplateMatch and its suppression
parser)."""

from __future__ import annotations

import pytest

from mprof.reducer.errors import MprofError
from mprof.report.suppressions import Suppression, parse, template_match


@pytest.mark.parametrize("template, text, expected", [
    ("foo", "xfooy", True),           # found anywhere
    ("foo", "fo", False),
    ("^foo", "foobar", True),
    ("^foo", "xfoo", False),          # ^ anchors at the start
    ("foo$", "xfoo", True),
    ("foo$", "foox", False),          # $ anchors at the end
    ("^foo$", "foo", True),
    ("^foo$", "foo2", False),
    ("a*c", "abbbc", True),
    ("a*c", "ca", False),             # pieces in order
    ("^a*c$", "abc", True),
    ("*", "anything", True),
    ("foo", "", False),               # an empty name never matches
    ("std::*vector", "std::__1::vector<int>", True),
    ("a*b$", "ab_b", False),          # each piece at its first place, as LSan takes it
    ("libfoo.so", "/usr/lib/x86_64-linux-gnu/libfoo.so.1", True),
])
def test_template_match(template: str, text: str, expected: bool) -> None:
    assert template_match(template, text) is expected


def test_a_file_keeps_leak_lines_with_their_place() -> None:
    text = "# comment\n\n  leak:foo  \nleak:^bar$\ncalled_lib:libx.so\nleak:\n"
    assert parse(text, "x.supp") == [Suppression("foo", "x.supp:3"), Suppression("^bar$", "x.supp:4")]


def test_a_line_without_a_kind_is_refused_with_its_place() -> None:
    with pytest.raises(MprofError, match=r"^x.supp:2: not a suppression \(TYPE:PATTERN\): 'foo'$"):
        parse("leak:a\nfoo\n", "x.supp")
