"""The reader of mprof(5)'s LEAK section, against files written by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from datafile_builder import DataFileBuilder
from mprof.reducer import datafile
from samples import rich
from test_datafile import refused, write

# rich()'s 4 paths have 30 blocks and 900 bytes live (path 0), 10 and 6 (path 1),
# 1 and 16 (path 2), none (path 3).
SCAN = (3, 5, 2, 4096, 9000, 123456)
ENTRIES = [(0, 1, 100, 9, 576, 0, 0, 20, 224), (1, 2, 3, 0, 0, 1, 1, 7, 2)]


def classified(**knobs: object) -> DataFileBuilder:
    return dataclasses.replace(rich(), **({"leak": SCAN, "leak_entries": list(ENTRIES)} | knobs))


def test_every_value_of_a_classified_file(tmp_path: Path) -> None:
    leaks = datafile.read(write(tmp_path, classified().build())).leaks
    assert leaks is not None
    assert (leaks.flags, leaks.threads_stopped, leaks.threads_unstopped) == (3, 5, 2)
    assert (leaks.root_bytes, leaks.block_bytes, leaks.scan_ns) == (4096, 9000, 123456)
    assert leaks.threads_unread and leaks.unknown_roots
    assert dict(leaks.kinds) == {0: (1, 100, 9, 576, 0, 0, 20, 224), 1: (2, 3, 0, 0, 1, 1, 7, 2)}


def test_compressed_and_with_values_a_newer_writer_adds(tmp_path: Path) -> None:
    b = classified(compress_level=6, leak_fields=10, leak_extra=(99, 98))
    leaks = datafile.read(write(tmp_path, b.build())).leaks
    assert leaks is not None and leaks.kinds[1] == (2, 3, 0, 0, 1, 1, 7, 2)


def test_a_file_without_leak_was_not_classified(tmp_path: Path) -> None:
    assert datafile.read(write(tmp_path, rich().build())).leaks is None


@pytest.mark.parametrize(("knobs", "message"), [
    ({"leak_entries": [(4, 0, 0, 0, 0, 0, 0, 0, 0)]},
     "corrupt: section LEAK entry 0 names path 4, but section PATH has 4 entries"),
    ({"leak_entries": [ENTRIES[1], ENTRIES[0]]},
     "corrupt: section LEAK entry 1 names path 0, not after the entry before's 1"),
    ({"leak_entries": [ENTRIES[0], ENTRIES[0]]},
     "corrupt: section LEAK entry 1 names path 0, not after the entry before's 0"),
    ({"leak_entries": [(0, 31, 100, 0, 0, 0, 0, 0, 0)]},
     "corrupt: section LEAK entry 0 has 31 blocks definitely lost, but path 0 has 30 live"),
    ({"leak_entries": [(0, 0, 0, 0, 0, 0, 0, 1, 901)]},
     "corrupt: section LEAK entry 0 has 901 bytes still reachable, but path 0 has 900 live"),
    ({"leak_entries": [ENTRIES[0], (1, 0, 0, 0, 7, 0, 0, 0, 0)]},
     "corrupt: section LEAK entry 1 has 7 bytes indirectly lost, but path 1 has 6 live"),
    ({"leak_entries": [(0, 0, 0, 0, 0, 16, 500, 15, 400)]},
     "corrupt: section LEAK entry 0's kinds add up to 31 blocks, but path 0 has 30 live"),
    ({"leak_fields": 7}, "corrupt: section LEAK has 7 fields a path, this mprof needs 8"),
    ({"leak": (4, *SCAN[1:])}, "corrupt: section LEAK has unknown flags 0x4"),
    ({"count_override": {"LEAK": 3}}, "corrupt: section LEAK payload ends inside entry 2"),
    ({"extra_payload": {"LEAK": b"\0"}}, "corrupt: section LEAK payload has 1 bytes after its entries"),
    ({"payload_override": {"LEAK": b"\0" * 40}},
     "corrupt: section LEAK payload ends inside the scan's figures (48 bytes needed, 40 left)"),
])
def test_a_corrupt_leak_section_is_refused_in_one_line(tmp_path: Path, knobs: dict[str, object],
                                                        message: str) -> None:
    assert refused(write(tmp_path, classified(**knobs).build())) == message


def test_leak_only_between_pool_and_end(tmp_path: Path) -> None:
    early = ["PROG", "MODS", "SUMM", "BINS", "ADDR", "NODE", "PATH", "LEAK", "TIME", "POOL", "END"]
    assert refused(write(tmp_path, classified(order=early).build())) == "corrupt: expected section TIME, found LEAK"
    twice = ["PROG", "MODS", "SUMM", "BINS", "ADDR", "NODE", "PATH", "TIME", "POOL", "LEAK", "LEAK", "END"]
    assert refused(write(tmp_path, classified(order=twice).build())) == (
        "corrupt: header says 12 sections, format version 7 has 10, or 11 with LEAK")


def test_the_header_counts_leak(tmp_path: Path) -> None:
    assert refused(write(tmp_path, classified(section_count=10).build())) == (
        "corrupt: header says 10 sections, the file has 11")
    assert refused(write(tmp_path, dataclasses.replace(rich(), section_count=11).build())) == (
        "corrupt: header says 11 sections, the file has 10")


def test_a_file_cut_inside_leak_is_truncated(tmp_path: Path) -> None:
    data, offsets = classified().build_layout()
    assert refused(write(tmp_path, data[:offsets["LEAK"] + 12])) == (
        "truncated: section END header needs 16 bytes, 12 remain")  # its tag unread
    assert refused(write(tmp_path, data[:offsets["LEAK"] + 20])) == "truncated: section LEAK needs 84 bytes, 4 remain"
