"""LeakSanitizer's template matching and suppression files, case by case
from LSan's rules (sanitizer_common's TemplateMatch and its suppression
parser)."""

from __future__ import annotations

import pytest

from mprof.reducer.errors import MprofError
from mprof.report.suppressions import Suppression, parse, suppress, template_match
from test_flame import path_model


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


# main > cache_fill > xmalloc keeps 100 bytes; main > rust_workers::leak_registry
# (a Rust v0 name, stored with its crate's disambiguator) keeps 30.
NAMES = {1: "main", 2: "cache_fill", 3: "xmalloc", 4: "rust_workers[70a8cec0dfedbb1a]::leak_registry"}


@pytest.mark.parametrize("pattern, suppressed, paths", [
    ("xmalloc", 100, 1),                        # the innermost frame
    ("cache_fill", 100, 1),                     # a frame in the middle: LSan looks at every frame
    ("^main$", 130, 2),                         # the outermost, on both paths
    ("fill_cache", 0, 0),
    ("rust_workers::leak_registry", 30, 1),     # the Rust path as Rust prints it
    ("^rust_workers::leak_registry$", 30, 1),
])
def test_a_suppression_matches_any_frame_of_a_path(pattern: str, suppressed: int, paths: int) -> None:
    model = path_model(NAMES, [((1, 2, 3), 100, 0, ""), ((1, 4), 30, 0, "")])
    result = suppress(model, [Suppression(pattern, "x.supp:1")])
    assert result.suppressed_bytes == suppressed
    assert sum(1 for path in result.paths if path.suppressed == pattern) == paths
