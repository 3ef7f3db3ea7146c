"""The data file reader against files written by hand from mprof(5)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from datafile_builder import DataFileBuilder, ModuleSpec
from mprof.reducer import datafile
from mprof.reducer.errors import DataFileError, MprofError
from samples import MAIN_BUILD_ID, PLUGIN_BUILD_ID, SUMMARY, rich


def write(tmp_path: Path, data: bytes, name: str = "x.mprof") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def refused(path: Path) -> str:
    """The one-line message the reader gives for path, without the path."""
    with pytest.raises(DataFileError) as info:
        datafile.read(path)
    message = str(info.value)
    assert "\n" not in message
    prefix = f"{path}: "
    assert message.startswith(prefix)
    return message[len(prefix) :]


# --- well-formed files ------------------------------------------------------


def test_rich_file_every_value(tmp_path: Path) -> None:
    path = write(tmp_path, rich().build())
    df = datafile.read(path)

    assert df.path == str(path)
    h = df.header
    assert (h.version, h.flags, h.stack_depth, h.leak_depth) == (1, 7, 32, 4)
    assert (h.pid, h.ppid) == (31337, 31336)
    assert (h.start_unix_ns, h.elapsed_ns) == (1_700_000_000_123_456_789, 2_500_000_000)
    assert h.call_graph and h.final and h.forked

    assert df.program.exe == "/usr/bin/prog"
    assert df.program.argv == ["prog", "-v", "caf\udce9"]
    assert df.program.argv[2].encode("utf-8", "surrogateescape") == b"caf\xe9"

    assert df.modules == (
        datafile.Module(0x555555554000, 0x555555554000, 0x55555555A000, False, MAIN_BUILD_ID, ""),
        datafile.Module(
            0x7F0000000000, 0x7F0000028000, 0x7F00001F0000, False, b"\x11" * 20, "/lib/libc.so.6"
        ),
        datafile.Module(
            0x7F1000000000, 0x7F1000001000, 0x7F1000005000, True, PLUGIN_BUILD_ID, "/opt/plugin.so"
        ),
        datafile.Module(0x7F2000000000, 0x7F2000000000, 0x7F2000030000, False, b"", "/lib/ld.so"),
    )

    s = df.summary
    assert list(s.values()) == SUMMARY
    assert s.allocs == 100 and s["allocs"] == 100
    assert s.frees == 60
    assert s.bytes_allocated == 5000
    assert s.bytes_freed == 3000
    assert s.max_live_objects == 45
    assert s.max_live_bytes == 2600
    assert s.malloc_calls == 1006
    assert s.monitor_bytes == 1021
    assert list(s.keys()) == [
        "allocs", "frees", "bytes_allocated", "bytes_freed", "max_live_objects",
        "max_live_bytes", "malloc_calls", "calloc_calls", "realloc_calls", "memalign_calls",
        "new_calls", "free_calls", "delete_calls", "free_null", "unknown_frees",
        "early_allocs", "early_frees", "untracked_allocs", "failed_allocs",
        "inherited_frees", "truncated_chains", "monitor_bytes",
    ]  # fmt: skip
    assert s.as_dict()["inherited_frees"] == 1019

    assert df.bins == (
        datafile.Bin(0, 1, 1, 0, 0),
        datafile.Bin(8, 10, 5, 80, 40),
        datafile.Bin(1024, 2, 0, 2048, 0),
        datafile.Bin(1025, 3, 1, 9000, 3000),
    )
    assert df.sites == (
        datafile.Site(0x555555555123, 70, 40, (100, 200, 300, 400), (10, 20, 30, 40)),
        datafile.Site(0x7F0000030456, 30, 20, (1, 2, 3, 4), (1, 1, 1, 1)),
    )
    assert df.leaks == (
        datafile.LeakChain((0x555555555123, 0x555555555200), 5, 2, 500, 200),
        datafile.LeakChain((1, 2, 3, 4), 1, 0, 16, 0),
    )
    assert df.pairs == (
        datafile.Pair(0x555555555200, 0x555555555123, 70, (5, 6, 7, 8)),
        datafile.Pair(0x555555555300, 0x555555555200, 12, (0, 0, 0, 99)),
    )


def test_zero_count_sections(tmp_path: Path) -> None:
    b = DataFileBuilder(flags=0, leak_depth=8, exe=b"", cmdline=b"")
    df = datafile.read(write(tmp_path, b.build()))
    assert not (df.header.call_graph or df.header.final or df.header.forked)
    assert df.header.leak_depth == 8
    assert df.program == datafile.Program("", [])
    assert (df.modules, df.bins, df.sites, df.leaks, df.pairs) == ((), (), (), (), ())
    assert all(v == 0 for v in df.summary.values())


def test_cmdline_without_final_nul_and_with_empty_argument(tmp_path: Path) -> None:
    b = DataFileBuilder(cmdline=b"prog\0\0last")
    assert datafile.read(write(tmp_path, b.build())).program.argv == ["prog", "", "last"]


def test_leak_depth_zero_with_chains(tmp_path: Path) -> None:
    b = DataFileBuilder(leak_depth=0, leaks=[((), 3, 1, 30, 10)])
    assert datafile.read(write(tmp_path, b.build())).leaks == (
        datafile.LeakChain((), 3, 1, 30, 10),
    )


def test_parse_from_bytes() -> None:
    df = datafile.parse(rich().build(), "mem")
    assert df.path == "mem" and len(df.sites) == 2


def test_records_are_frozen(tmp_path: Path) -> None:
    df = datafile.read(write(tmp_path, rich().build()))
    with pytest.raises(AttributeError):
        df.header.pid = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        df.summary.allocs = 1  # type: ignore[misc]


def test_is_data_file(tmp_path: Path) -> None:
    assert datafile.is_data_file(write(tmp_path, rich().build()))
    # Only the magic counts: a damaged data file is still a data file.
    assert datafile.is_data_file(write(tmp_path, b"MPROFDAT", "short.mprof"))
    assert not datafile.is_data_file(write(tmp_path, b"#!/bin/sh\n", "script"))
    assert not datafile.is_data_file(write(tmp_path, b"", "empty"))
    assert not datafile.is_data_file(tmp_path / "missing")
    assert not datafile.is_data_file(tmp_path)


def test_error_types() -> None:
    e = DataFileError("x.mprof", "corrupt: checksum mismatch")
    assert isinstance(e, MprofError)
    assert str(e) == "x.mprof: corrupt: checksum mismatch"
    assert e.exit_code == 1
    assert (e.path, e.problem) == ("x.mprof", "corrupt: checksum mismatch")
    assert str(DataFileError("a\nb", "oops")) == "a\\nb: oops"


# --- refused files ----------------------------------------------------------


def test_empty_file(tmp_path: Path) -> None:
    assert refused(write(tmp_path, b"")) == "not an mprof data file (empty file)"


def test_missing_file(tmp_path: Path) -> None:
    assert refused(tmp_path / "nope.mprof") == "cannot open: No such file or directory"


def test_directory(tmp_path: Path) -> None:
    assert refused(tmp_path) == "cannot open: Is a directory"


def test_bad_magic(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(magic=b"MPROFDAX").build())
    assert refused(path) == "not an mprof data file (bad magic)"


def test_short_file_that_is_not_a_data_file(tmp_path: Path) -> None:
    assert refused(write(tmp_path, b"hi\n")) == "not an mprof data file (bad magic)"


def test_newer_version(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(version=2).build())
    assert refused(path) == "format version 2 is newer than this mprof understands (1)"


def test_newer_version_with_a_different_header(tmp_path: Path) -> None:
    # A newer format may change everything after the version field.
    path = write(tmp_path, b"MPROFDAT" + struct.pack("<H", 7) + b"\xff" * 3)
    assert refused(path) == "format version 7 is newer than this mprof understands (1)"


def test_version_zero(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(version=0).build())
    assert refused(path) == "unknown format version 0 (this mprof understands 1)"


@pytest.mark.parametrize("length", [5, 8, 30, 63])
def test_truncated_header(tmp_path: Path, length: int) -> None:
    path = write(tmp_path, rich().build()[:length])
    assert refused(path) == f"truncated: header needs 64 bytes, {length} remain"


def test_truncated_in_a_section_header(tmp_path: Path) -> None:
    data, offsets = rich().build_layout()
    path = write(tmp_path, data[: offsets["SUMM"] + 5])
    assert refused(path) == "truncated: section SUMM header needs 16 bytes, 5 remain"


def test_truncated_mid_section(tmp_path: Path) -> None:
    data, offsets = rich().build_layout()
    path = write(tmp_path, data[: offsets["LEAK"] + 16 + 17])
    # Two chains of 4 addresses and 4 counters: 8 + 2 * 64 bytes.
    assert refused(path) == "truncated: section LEAK needs 136 bytes, 17 remain"


def test_truncated_before_a_section(tmp_path: Path) -> None:
    data, offsets = rich().build_layout()
    path = write(tmp_path, data[: offsets["MODS"]])
    assert refused(path) == "truncated: file ends before section MODS"


def test_missing_end(tmp_path: Path) -> None:
    data, offsets = rich().build_layout()
    path = write(tmp_path, data[: offsets["END"]])
    assert refused(path) == "truncated: file ends before section END"


def test_truncated_in_end(tmp_path: Path) -> None:
    data = rich().build()
    path = write(tmp_path, data[:-3])
    assert refused(path) == "truncated: section END needs 8 bytes, 5 remain"


def test_checksum_mismatch(tmp_path: Path) -> None:
    data, offsets = rich().build_layout()
    damaged = bytearray(data)
    damaged[offsets["SITE"] + 16 + 8] ^= 0x40  # a bit of the first site's address
    path = write(tmp_path, bytes(damaged))
    assert refused(path) == "corrupt: checksum mismatch"


def test_wrong_checksum_value(tmp_path: Path) -> None:
    b = rich()
    good = b.build()
    (crc,) = struct.unpack_from("<I", good, len(good) - 8)
    b.crc = crc ^ 1
    assert refused(write(tmp_path, b.build())) == "corrupt: checksum mismatch"


def test_trailing_garbage(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(trailing=b"\0\0\0").build())
    assert refused(path) == "corrupt: 3 bytes after section END"


def test_wrong_section_order(tmp_path: Path) -> None:
    b = DataFileBuilder(order=["PROG", "MODS", "SUMM", "SITE", "BINS", "LEAK", "PAIR", "END"])
    assert refused(write(tmp_path, b.build())) == "corrupt: expected section BINS, found SITE"


def test_missing_section(tmp_path: Path) -> None:
    b = DataFileBuilder(
        order=["PROG", "MODS", "SUMM", "BINS", "SITE", "PAIR", "END"], section_count=8
    )
    assert refused(write(tmp_path, b.build())) == "corrupt: expected section LEAK, found PAIR"


def test_repeated_section(tmp_path: Path) -> None:
    b = DataFileBuilder(
        order=["PROG", "PROG", "MODS", "SUMM", "BINS", "SITE", "LEAK", "PAIR", "END"],
        section_count=8,
    )
    assert refused(write(tmp_path, b.build())) == "corrupt: expected section MODS, found PROG"


def test_unknown_tag(tmp_path: Path) -> None:
    data, offsets = DataFileBuilder().build_layout()
    damaged = bytearray(data)
    damaged[offsets["MODS"] : offsets["MODS"] + 4] = b"\x01\x02\x03\x04"
    path = write(tmp_path, bytes(damaged))
    assert refused(path) == "corrupt: expected section MODS, found 0x04030201"


def test_wrong_section_count(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(section_count=9).build())
    assert refused(path) == "corrupt: header says 9 sections, format version 1 has 8"


def test_wrong_header_size(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(header_size=72).build())
    assert refused(path) == "corrupt: header size is 72, format version 1 has 64"


@pytest.mark.parametrize("reserved", [(1, 0), (0, 1 << 63)])
def test_header_reserved_not_zero(tmp_path: Path, reserved: tuple[int, int]) -> None:
    path = write(tmp_path, DataFileBuilder(header_reserved=reserved).build())
    assert refused(path) == "corrupt: header reserved field is not zero"


def test_unknown_header_flags(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(flags=0x3 | 0x10).build())
    assert refused(path) == "corrupt: unknown header flags 0x10"


def test_section_reserved_not_zero(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(section_reserved={"BINS": 1}).build())
    assert refused(path) == "corrupt: section BINS reserved field is not zero"


def test_end_reserved_not_zero(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(end_reserved=5).build())
    assert refused(path) == "corrupt: section END reserved field is not zero"


def test_end_payload_size(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(size_override={"END": 12}, trailing=b"\0" * 4).build())
    assert refused(path) == "corrupt: section END payload is 12 bytes, must be 8"


def test_payload_longer_than_its_entries(tmp_path: Path) -> None:
    b = rich()
    b.count_override["SITE"] = 1
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section SITE payload is 184 bytes, but 1 entry needs 96"
    )


def test_payload_shorter_than_its_entries(tmp_path: Path) -> None:
    b = rich()
    b.count_override["PAIR"] = 3
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section PAIR payload is 120 bytes, but 3 entries need 176"
    )


def test_payload_too_short_for_count(tmp_path: Path) -> None:
    b = DataFileBuilder(payload_override={"BINS": b"\0\0\0\0"})
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section BINS payload is 4 bytes, too short for its count"
    )


def test_huge_count(tmp_path: Path) -> None:
    b = DataFileBuilder()
    b.count_override["LEAK"] = 1 << 60
    message = refused(write(tmp_path, b.build()))
    assert message.startswith("corrupt: section LEAK payload is 8 bytes, but ")


def test_huge_leak_depth(tmp_path: Path) -> None:
    b = DataFileBuilder(leak_depth=0xFFFFFFFF)
    b.count_override["LEAK"] = 1
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section LEAK payload is 8 bytes, but 1 entry needs 34359738400"
    )


def test_bytes_after_program(tmp_path: Path) -> None:
    b = DataFileBuilder(extra_payload={"PROG": b"xyz"})
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section PROG payload has 3 bytes after its entries"
    )


def test_program_length_overrun(tmp_path: Path) -> None:
    b = DataFileBuilder(payload_override={"PROG": struct.pack("<I", 50) + b"/bin/sh"})
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section PROG payload ends inside the executable path"
        " (50 bytes needed, 7 left)"
    )


def test_module_count_overrun(tmp_path: Path) -> None:
    b = rich()
    b.count_override["MODS"] = 5
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section MODS payload ends inside module 4 (28 bytes needed, 0 left)"
    )


def test_bytes_after_modules(tmp_path: Path) -> None:
    b = rich()
    b.count_override["MODS"] = 3
    # The fourth module left over: 28 fixed bytes and "/lib/ld.so".
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section MODS payload has 38 bytes after its entries"
    )


def test_module_path_overrun(tmp_path: Path) -> None:
    module = struct.pack("<QQQBBH", 0, 0, 16, 0, 2, 40) + b"\xaa\xbb/lib"
    b = DataFileBuilder(payload_override={"MODS": struct.pack("<Q", 1) + module})
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section MODS payload ends inside the path of module 0"
        " (40 bytes needed, 4 left)"
    )


def test_module_unknown_flags(tmp_path: Path) -> None:
    b = DataFileBuilder(modules=[ModuleSpec(0, 0x1000, 0x2000, flags=3)])
    assert refused(write(tmp_path, b.build())) == "corrupt: module 0 has unknown flags 0x3"


def test_module_reversed_range(tmp_path: Path) -> None:
    b = DataFileBuilder(modules=[ModuleSpec(0, 0x1000, 0x2000), ModuleSpec(0, 0x3000, 0x2000)])
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: module 1 starts at 0x3000, after its end 0x2000"
    )


def test_short_summary(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(summary=[0] * 21).build())
    assert refused(path) == "corrupt: section SUMM has 21 values, this mprof needs 22"


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ([0, 1026], "corrupt: bin 1 has size 1026, above 1025"),
        ([4, 8, 8], "corrupt: bin 2 has size 8, not above the previous bin's 8"),
        ([16, 4], "corrupt: bin 1 has size 4, not above the previous bin's 16"),
    ],
)
def test_bad_bin_sizes(tmp_path: Path, sizes: list[int], message: str) -> None:
    b = DataFileBuilder(bins=[(size, 1, 0, size, 0) for size in sizes])
    assert refused(write(tmp_path, b.build())) == message


def test_leak_chain_with_inner_zero(tmp_path: Path) -> None:
    b = DataFileBuilder(leak_depth=4, leaks=[((1, 2), 1, 0, 8, 0), ((1, 0, 3), 1, 0, 8, 0)])
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: leak chain 1 has a zero address before its end"
    )


def test_pairs_without_call_graph(tmp_path: Path) -> None:
    b = DataFileBuilder(flags=0x2, pairs=[(1, 2, 3, (0, 0, 0, 0))])
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section PAIR has 1 entry but the header's call-graph flag is clear"
    )
