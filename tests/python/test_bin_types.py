"""The types column of the allocation bin table: the program's own named
types first, a couple of them shown and the rest counted; every one in JSON,
on the page's hover and with --wide."""

from __future__ import annotations

from mprof.report import tables
from mprof.report.model import BinRow

# What the resolver lists for 72-byte types of a C++ program holding a
# std::unordered_map<std::string, std::vector<int>>, and of Rust's
# standard library: typedefs of one node, and types of no name of their own.
NODE = ("std::__detail::_Hash_node<std::pair<const std::__cxx11::basic_string<char, std::char_traits<char>, "
        "std::allocator<char> >, std::vector<int, std::allocator<int> > >, true>")
TYPES = [
    f"std::__detail::_Hashtable_alloc<std::allocator<{NODE}> >::__node_type",
    NODE,
    "Session",
    "core::slice::iter::Split<u8, fn(&u8) -> bool>",
    "(usize, std::vec::Vec<u8>)",
    "_IO_FILE",
    "<alloc::vec::Vec<u8> as core::fmt::Debug>::{vtable_type}",
    "u64",
    "Cache::Entry<std::string>",
]


def bin_of(types: list[str]) -> BinRow:
    return BinRow(72, 1, 0, 72, 0, ", ".join(types))


def test_types_are_split_where_no_bracket_is_open() -> None:
    assert sorted(tables.bin_types(bin_of(TYPES))) == sorted(TYPES)


def test_the_programs_own_named_types_come_first_then_the_librarys_then_the_unnamed() -> None:
    assert tables.bin_types(bin_of(TYPES)) == [
        "Session", "Cache::Entry<std::string>",
        # The standard library's: a type before a typedef in a template
        # (>::), then without template arguments, then shorter.
        "_IO_FILE", "core::slice::iter::Split<u8, fn(&u8) -> bool>", NODE, TYPES[0],
        "u64", "(usize, std::vec::Vec<u8>)", "<alloc::vec::Vec<u8> as core::fmt::Debug>::{vtable_type}"]


def test_a_cell_shows_two_types_without_their_arguments_and_counts_the_rest() -> None:
    ranked = tables.bin_types(bin_of(TYPES))
    assert tables.types_text(ranked, False) == "Session, Cache::Entry<> and 7 more"
    assert tables.types_text([NODE, TYPES[0]], False) == (
        "std::__detail::_Hash_node<>, std::__detail::_Hashtable_alloc<>::__node_type")
    assert tables.types_text(["core::slice::iter::Split<u8, fn(&u8) -> bool>"], False) == "core::slice::iter::Split<>"
    assert tables.types_text(ranked, True) == ", ".join(ranked)
    assert tables.types_text([], False) == ""
