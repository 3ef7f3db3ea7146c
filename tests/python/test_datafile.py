"""The data file reader against files written by hand from mprof(5)."""

from __future__ import annotations

import dataclasses
import os
import struct
import threading
import zlib
from pathlib import Path

import pytest

from datafile_builder import DataFileBuilder, ModuleSpec, uv
from mprof.reducer import datafile, tree
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
    assert (h.version, h.flags, h.stack_depth, h.leak_depth) == (7, 7, 32, 4)
    assert (h.pid, h.ppid) == (31337, 31336)
    assert (h.start_unix_ns, h.elapsed_ns) == (1_700_000_000_123_456_789, 2_500_000_000)
    assert h.call_graph and h.final and h.forked

    assert df.program.exe == "/usr/bin/prog"
    assert df.program.argv == ["prog", "-v", "caf\udce9"]
    assert df.program.argv[2].encode("utf-8", "surrogateescape") == b"caf\xe9"
    assert df.program.lsan_suppressions == "leak:libfoo.so\n# caf\udce9\n"
    assert df.program.refused_settings == ("MPROF_DEPTH=5000", "MPROF_BLOCKS=m\udce9p")

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
    with pytest.raises(KeyError, match="'no_such_figure'"):
        s["no_such_figure"]
    assert "no_such_figure" not in s and "frees" in s
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
        "inherited_frees", "truncated_chains", "monitor_bytes", "temporary_allocs", "peak_ns", "peak_allocs",
        "pool_alloc_calls", "pool_free_calls", "pool_resets", "backing_blocks", "backing_bytes", "backing_frees",
        "backing_bytes_freed", "mmap_calls", "munmap_calls", "mremap_calls", "brk_calls", "mapped_bytes",
        "unmapped_bytes", "mapped_splits",
    ]  # fmt: skip
    assert s.as_dict()["inherited_frees"] == 1019

    assert df.bins == (
        datafile.Bin(0, 1, 1, 0, 0),
        datafile.Bin(8, 10, 5, 80, 40, 3, 4, 32),
        datafile.Bin(1024, 2, 0, 2048, 0),
        datafile.Bin(1025, 3, 1, 9000, 3000),
    )
    # rich's paths, outermost first: 0x...300 > 0x...200 > 0x...123 and
    # > 0x7f...456, 5 > 4 > 3 > 2 > 1, and the empty path.
    assert df.nodes == (
        datafile.Node(-1, 0x555555555300), datafile.Node(0, 0x555555555200), datafile.Node(1, 0x555555555123),
        datafile.Node(1, 0x7F0000030456), datafile.Node(-1, 5), datafile.Node(4, 4), datafile.Node(5, 3),
        datafile.Node(6, 2), datafile.Node(7, 1),
    )
    assert df.timeline == (datafile.TimePoint(1_000_000, 4096, 3, 1 << 22, 0),
                           datafile.TimePoint(3_000_000, 10_000, 9, 5 << 20, 8192))
    # The value after the thirteen known ones of each path is ignored.
    assert df.paths == (
        datafile.CallPath(2, 70, 40, (100, 200, 300, 400), (10, 20, 30, 40), 7, 25, 800),
        datafile.CallPath(3, 30, 20, (1, 2, 3, 4), (1, 1, 1, 1)),
        datafile.CallPath(8, 1, 0, (16, 0, 0, 0), (0, 0, 0, 0)),
        datafile.CallPath(-1, 2, 2, (0, 8, 0, 0), (0, 8, 0, 0)),
    )
    assert df.pools == (datafile.PoolFrame(0x555555555400, "parser arena"), datafile.PoolFrame(0, ""),
                        datafile.PoolFrame(0x555555555500, "caf\udce9"))


def test_zero_count_sections(tmp_path: Path) -> None:
    b = DataFileBuilder(flags=0, leak_depth=8, exe=b"", cmdline=b"")
    df = datafile.read(write(tmp_path, b.build()))
    assert not (df.header.call_graph or df.header.final or df.header.forked)
    assert df.header.leak_depth == 8
    assert df.program == datafile.Program("", [])
    assert (df.modules, df.bins, df.nodes, df.paths) == ((), (), (), ())
    assert all(v == 0 for v in df.summary.values())


def test_cmdline_without_final_nul_and_with_empty_argument(tmp_path: Path) -> None:
    b = DataFileBuilder(cmdline=b"prog\0\0last")
    assert datafile.read(write(tmp_path, b.build())).program.argv == ["prog", "", "last"]


def test_varint_sections_byte_for_byte(tmp_path: Path) -> None:
    # Spelled out from mprof(5) rather than from the builder, so that the
    # builder's ADDR table (sorted, deltas), its tree and its minimal LEB128
    # are checked too: the format agreement test relies on them to match
    # the monitor.  One path: 0x1000 calls 0x1234, which allocates 200 bytes.
    b = DataFileBuilder(leak_depth=3, paths=[((0x1234, 0x1000), 1, 0, (200, 0, 0, 0), (0, 0, 0, 0))])
    data, offsets = b.build_layout()

    def payload(name: str) -> bytes:
        (size,) = struct.unpack_from("<Q", data, offsets[name] + 8)
        return data[offsets[name] + 16 : offsets[name] + 16 + size]

    count = struct.pack("<Q", 2)
    assert payload("ADDR") == count + b"\x80\x20" + b"\xb4\x04"  # 0x1000, then +0x234
    # 0x1000 under the empty path (up 0), 0x1234 under the node 1 up.
    assert payload("NODE") == count + b"\x00\x00" + b"\x01\x01"
    # One path of thirteen values: node 2 (index 1 + 1), 1 alloc, 0 frees,
    # 200 in s, no temporaries, nothing at the peak.
    assert payload("PATH") == struct.pack("<QQ", 1, 13) + b"\x02\x01\x00\xc8\x01" + b"\x00" * 10
    df = datafile.read(write(tmp_path, data))
    assert df.nodes == (datafile.Node(-1, 0x1000), datafile.Node(0, 0x1234))
    assert df.paths == (datafile.CallPath(1, 1, 0, (200, 0, 0, 0), (0, 0, 0, 0)),)


def test_varint_limits(tmp_path: Path) -> None:
    top = (1 << 64) - 1
    b = DataFileBuilder(paths=[((top,), top, 0, (top, 0, 0, 0), (0, 0, 0, 0))])
    assert uv(top) == b"\xff" * 9 + b"\x01"  # the longest a uv may be
    df = datafile.read(write(tmp_path, b.build()))
    assert df.nodes == (datafile.Node(-1, top),)
    assert df.paths == (datafile.CallPath(0, top, 0, (top, 0, 0, 0), (0, 0, 0, 0)),)


def test_varint_longer_than_needed(tmp_path: Path) -> None:
    # mprof(5) bounds a uv's length, not its minimality: node 1 in two
    # bytes, 1 alloc in ten bytes.
    path = b"\x81\x00" + b"\x81" + b"\x80" * 8 + b"\x00" + b"\x00" * 12
    b = DataFileBuilder(
        paths=[((0x1000,), 1, 0, (0, 0, 0, 0), (0, 0, 0, 0))],
        payload_override={"PATH": struct.pack("<QQ", 1, 13) + path},
    )
    assert datafile.read(write(tmp_path, b.build())).paths == (
        datafile.CallPath(0, 1, 0, (0, 0, 0, 0), (0, 0, 0, 0)),
    )


def test_huge_leak_depth_is_harmless(tmp_path: Path) -> None:
    b = DataFileBuilder(leak_depth=0xFFFFFFFF, paths=[((0x20, 0x10), 1, 0, (8, 0, 0, 0), (0,) * 4)])
    assert tree.totals(datafile.read(write(tmp_path, b.build()))).leaks == (
        tree.LeakChain((0x20, 0x10), 1, 0, 8, 0),
    )


def test_leak_depth_zero_groups_every_path_in_one_chain(tmp_path: Path) -> None:
    b = DataFileBuilder(leak_depth=0, paths=[((0x10,), 3, 1, (30, 0, 0, 0), (10, 0, 0, 0)),
                                             ((0x20,), 1, 0, (8, 0, 0, 0), (0,) * 4)])
    assert tree.totals(datafile.read(write(tmp_path, b.build()))).leaks == (
        tree.LeakChain((), 4, 1, 38, 10),
    )


def test_parse_from_bytes() -> None:
    df = datafile.parse(rich().build(), "mem")
    assert df.path == "mem" and len(df.paths) == 4
    with pytest.raises(DataFileError) as info:
        datafile.parse(b"xyz")
    assert str(info.value) == "<data>: not an mprof data file (bad magic)"


def test_records_are_frozen(tmp_path: Path) -> None:
    df = datafile.read(write(tmp_path, rich().build()))
    with pytest.raises(AttributeError):
        df.header.pid = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        df.summary.allocs = 1  # type: ignore[misc]


def test_error_types() -> None:
    e = DataFileError("x.mprof", "corrupt: checksum mismatch")
    assert isinstance(e, MprofError)
    assert str(e) == "x.mprof: corrupt: checksum mismatch"
    assert e.exit_code == 1
    assert (e.path, e.problem) == ("x.mprof", "corrupt: checksum mismatch")
    assert str(DataFileError("a\nb", "oops")) == "a\\x0ab: oops"
    # One line whatever the path holds, escaped once as the reports escape
    # names, a backslash doubled so that no path reads like another's escape.
    assert str(MprofError("a\\n\rb\nc\udcff")) == "a\\\\n\\x0db\\x0ac\\xff"
    assert MprofError("raw\n", 3).args == ("raw\n",) and MprofError("raw\n", 3).exit_code == 3


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
    path = write(tmp_path, DataFileBuilder(version=8).build())
    assert refused(path) == "format version 8 is newer than this mprof understands (7)"


def test_newer_version_in_a_file_cut_after_it(tmp_path: Path) -> None:
    # The 8-byte magic and the u16 version, nothing more: the version is judged first.
    path = write(tmp_path, DataFileBuilder(version=8).build()[:10])
    assert refused(path) == "format version 8 is newer than this mprof understands (7)"


def test_a_header_and_nothing_after_it(tmp_path: Path) -> None:
    data, offsets = rich().build_layout()
    assert refused(write(tmp_path, data[: offsets["PROG"]])) == "truncated: file ends before section PROG"


def test_newer_version_with_a_different_header(tmp_path: Path) -> None:
    # A newer format may change everything after the version field.
    path = write(tmp_path, b"MPROFDAT" + struct.pack("<H", 8) + b"\xff" * 3)
    assert refused(path) == "format version 8 is newer than this mprof understands (7)"


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5, 6])
def test_older_version(tmp_path: Path, version: int) -> None:
    # Older versions are refused like any version this mprof does not know:
    # version 1's entries were fixed-size, version 2 had chains and pairs
    # where version 3 has the tree, version 4 added PROG's suppressions,
    # version 5 its refused settings, version 6 compressed sections and
    # version 7 the pools.
    path = write(tmp_path, DataFileBuilder(version=version).build())
    assert refused(path) == f"unknown format version {version} (this mprof understands 7)"


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
    path = write(tmp_path, data[: offsets["PATH"] + 16 + 17])
    # The count and the field count, then four paths of fourteen values, one
    # byte each but two for 200, 300, 400, 800 and each 999: 16 + 20 + 16 * 3.
    assert refused(path) == "truncated: section PATH needs 84 bytes, 17 remain"


def test_truncated_before_a_section(tmp_path: Path) -> None:
    data, offsets = rich().build_layout()
    path = write(tmp_path, data[: offsets["MODS"]])
    assert refused(path) == "truncated: file ends before section MODS"


def test_missing_end(tmp_path: Path) -> None:
    data, offsets = rich().build_layout()
    path = write(tmp_path, data[: offsets["END"]])
    assert refused(path) == "truncated: file ends before section END"


@pytest.mark.parametrize(("cut", "left"), [(3, 5), (8, 0)])
def test_truncated_in_end(tmp_path: Path, cut: int, left: int) -> None:
    # END's header whole, its 8 bytes of payload cut short or gone.
    data = rich().build()
    path = write(tmp_path, data[:-cut])
    assert refused(path) == f"truncated: section END needs 8 bytes, {left} remain"


def test_checksum_mismatch(tmp_path: Path) -> None:
    data, offsets = rich().build_layout()
    damaged = bytearray(data)
    damaged[offsets["NODE"] + 16 + 9] ^= 0x40  # a bit of the first node's address index
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
    b = DataFileBuilder(
        order=["PROG", "MODS", "SUMM", "BINS", "NODE", "ADDR", "PATH", "TIME", "POOL", "END"]
    )
    assert refused(write(tmp_path, b.build())) == "corrupt: expected section ADDR, found NODE"


def test_missing_section(tmp_path: Path) -> None:
    b = DataFileBuilder(
        order=["PROG", "MODS", "SUMM", "BINS", "ADDR", "PATH", "TIME", "POOL", "END"], section_count=10
    )
    assert refused(write(tmp_path, b.build())) == "corrupt: expected section NODE, found PATH"


def test_repeated_section(tmp_path: Path) -> None:
    b = DataFileBuilder(
        order=["PROG", "PROG", "MODS", "SUMM", "BINS", "ADDR", "NODE", "PATH", "TIME", "POOL", "END"],
        section_count=10,
    )
    assert refused(write(tmp_path, b.build())) == "corrupt: expected section MODS, found PROG"


def test_unknown_tag(tmp_path: Path) -> None:
    data, offsets = DataFileBuilder().build_layout()
    damaged = bytearray(data)
    damaged[offsets["MODS"] : offsets["MODS"] + 4] = b"\x01\x02\x03\x04"
    path = write(tmp_path, bytes(damaged))
    assert refused(path) == "corrupt: expected section MODS, found 0x04030201"


def test_wrong_section_count(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(section_count=12).build())
    assert refused(path) == "corrupt: header says 12 sections, format version 7 has 10, or 11 with LEAK"


def test_wrong_header_size(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(header_size=72).build())
    assert refused(path) == "corrupt: header size is 72, format version 7 has 64"


@pytest.mark.parametrize("reserved", [1, 1 << 63])
def test_header_reserved_not_zero(tmp_path: Path, reserved: int) -> None:
    path = write(tmp_path, DataFileBuilder(header_reserved=reserved).build())
    assert refused(path) == "corrupt: header reserved field is not zero"


def test_ending_signal_and_checkpoint_flag(tmp_path: Path) -> None:
    killed = datafile.read(write(tmp_path, DataFileBuilder(end_signal=11).build()))
    assert (killed.header.final, killed.header.checkpoint, killed.header.end_signal) == (True, False, 11)
    checkpoint = datafile.read(write(tmp_path, DataFileBuilder(flags=0x1 | 0x8).build(), "checkpoint.mprof"))
    assert (checkpoint.header.final, checkpoint.header.checkpoint, checkpoint.header.end_signal) == (False, True, 0)


@pytest.mark.parametrize(("flags", "end_signal", "problem"), [
    (0x1 | 0x2 | 0x8, 0, "corrupt: header flags say both final and checkpoint"),
    (0x1 | 0x8, 9, "corrupt: ending signal 9 in a file that is not final"),
    (0x1, 6, "corrupt: ending signal 6 in a file that is not final"),
    (0x3, 128, "corrupt: ending signal 128 is not a signal number"),
])
def test_ending_signal_must_fit_the_flags(tmp_path: Path, flags: int, end_signal: int, problem: str) -> None:
    path = write(tmp_path, DataFileBuilder(flags=flags, end_signal=end_signal).build())
    assert refused(path) == problem


def test_unknown_header_flags(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(flags=0x3 | 0x40).build())
    assert refused(path) == "corrupt: unknown header flags 0x40"


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
    b.count_override["PATH"] = 3
    # The empty path left over: its node 0 and fourteen values, one byte
    # each but two for 999.
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section PATH payload has 16 bytes after its entries"
    )


def test_payload_shorter_than_its_entries(tmp_path: Path) -> None:
    b = rich()
    b.count_override["NODE"] = 10
    assert (
        refused(write(tmp_path, b.build())) == "corrupt: section NODE payload ends inside entry 9"
    )


def test_payload_ends_inside_a_varint(tmp_path: Path) -> None:
    b = rich()
    b.extra_payload["NODE"] = b"\x01\x80"  # a tenth node: up 1, then half an index
    b.count_override["NODE"] = 10
    assert (
        refused(write(tmp_path, b.build())) == "corrupt: section NODE payload ends inside entry 9"
    )


def test_bytes_after_paths(tmp_path: Path) -> None:
    b = rich()
    b.extra_payload["PATH"] = b"\x00\x00"
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section PATH payload has 2 bytes after its entries"
    )


def test_payload_too_short_for_count(tmp_path: Path) -> None:
    b = DataFileBuilder(payload_override={"BINS": b"\0\0\0\0"})
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section BINS payload is 4 bytes, too short for its count"
    )


@pytest.mark.parametrize("section", ["ADDR", "NODE", "PATH"])
def test_huge_count(tmp_path: Path, section: str) -> None:
    # Stops at the payload's end at once rather than looping over the count.
    b = DataFileBuilder()
    b.count_override[section] = 1 << 60
    assert (
        refused(write(tmp_path, b.build()))
        == f"corrupt: section {section} payload ends inside entry 0"
    )


def test_address_table_too_short_for_count(tmp_path: Path) -> None:
    b = DataFileBuilder(payload_override={"ADDR": b"\0\0\0"})
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section ADDR payload ends inside the entry count (8 bytes needed, 3 left)"
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


def test_summary_too_short_for_its_count(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(payload_override={"SUMM": b"\0" * 7}).build())
    assert refused(path) == "corrupt: section SUMM payload is 7 bytes, too short for its count"


def test_a_module_of_no_bytes_is_read(tmp_path: Path) -> None:
    # mprof(5): end is exclusive, so start == end is a module of no bytes, not a reversed one.
    b = DataFileBuilder(modules=[ModuleSpec(0, 0x1000, 0x2000), ModuleSpec(0, 0x3000, 0x3000)])
    assert [(m.start, m.end) for m in datafile.read(write(tmp_path, b.build())).modules] == [
        (0x1000, 0x2000), (0x3000, 0x3000)]


def test_short_summary(tmp_path: Path) -> None:
    path = write(tmp_path, DataFileBuilder(summary=[0] * 38).build())
    assert refused(path) == "corrupt: section SUMM has 38 values, this mprof needs 39"


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


def test_address_zero(tmp_path: Path) -> None:
    # 0 is never a return address; in version 1 it padded short chains.
    b = DataFileBuilder(leak_depth=4, paths=[((1, 2), 1, 0, (8,) + (0,) * 3, (0,) * 4),
                                             ((1, 0, 3), 1, 0, (8,) + (0,) * 3, (0,) * 4)])
    assert refused(write(tmp_path, b.build())) == "corrupt: section ADDR entry 0 is address 0"


def test_addresses_not_increasing(tmp_path: Path) -> None:
    b = DataFileBuilder(
        paths=[((0x1000,), 1, 0, (8, 0, 0, 0), (0, 0, 0, 0))],
        addresses=[0x1000, 0x2000, 0x2000],
    )
    assert (
        refused(write(tmp_path, b.build()))
        == "corrupt: section ADDR entry 2 is not above the one before (difference 0)"
    )


def test_address_past_64_bits(tmp_path: Path) -> None:
    # Decreasing cannot be written as differences; wrapping around is the
    # nearest a writer can get.
    table = struct.pack("<Q", 2) + uv(0xFFFF_FFFF_FFFF_F000) + uv(0x1000)
    b = DataFileBuilder(payload_override={"ADDR": table})
    assert refused(write(tmp_path, b.build())) == "corrupt: section ADDR entry 1 is past 64 bits"


@pytest.mark.parametrize(
    ("varint", "problem"),
    [
        (b"\x80" * 10 + b"\x00", "has a varint longer than 10 bytes"),
        (b"\xff" * 9 + b"\x02", "has a varint that does not fit in 64 bits"),
    ],
)
@pytest.mark.parametrize("section", ["ADDR", "NODE"])
def test_bad_varint(tmp_path: Path, section: str, varint: bytes, problem: str) -> None:
    b = DataFileBuilder(
        paths=[((0x1000,), 1, 0, (8, 0, 0, 0), (0, 0, 0, 0))],
        payload_override={section: struct.pack("<Q", 1) + varint},
    )
    assert refused(write(tmp_path, b.build())) == f"corrupt: section {section} entry 0 {problem}"


ONE = (1, 0, (8, 0, 0, 0), (0, 0, 0, 0))  # one allocation of 8 bytes, kept


@pytest.mark.parametrize(
    ("builder", "message"),
    [
        (
            DataFileBuilder(paths=[((0x1000, 0x2000), *ONE)], index_override={0x1000: 2}),
            "corrupt: section NODE entry 1 has address index 2, but section ADDR has 2 entries",
        ),
        (
            DataFileBuilder(nodes=[(0, 0x1000), (2, 0x2000)], paths=[(2, *ONE)]),
            "corrupt: section NODE entry 1 names a parent 2 entries up, before the first",
        ),
        (
            DataFileBuilder(nodes=[(0, 0x1000)], paths=[(2, *ONE)]),
            "corrupt: section PATH entry 0 has node 2, but section NODE has 1 entry",
        ),
        (
            DataFileBuilder(nodes=[(0, 0x1000)], paths=[(1, *ONE), (1, *ONE)]),
            "corrupt: section PATH entry 1 repeats the path of an earlier entry",
        ),
        (
            DataFileBuilder(paths=[((0x1000,), *ONE)], path_fields=12),
            "corrupt: section PATH has 12 fields a path, this mprof needs 13",
        ),
        # No path deeper than the stack depth, or in mprof- mode (flag 1
        # clear) than the leak depth.
        (
            DataFileBuilder(stack_depth=2, paths=[((1, 2), *ONE), ((1, 2, 3), *ONE)]),
            "corrupt: section PATH entry 1 is 3 addresses deep, above the header's depth 2",
        ),
        (
            DataFileBuilder(flags=0x2, leak_depth=2, paths=[((1, 2), *ONE), ((1, 2, 3), *ONE)]),
            "corrupt: section PATH entry 1 is 3 addresses deep, above the header's depth 2",
        ),
    ],
)
def test_broken_trees(tmp_path: Path, builder: DataFileBuilder, message: str) -> None:
    assert refused(write(tmp_path, builder.build())) == message


def test_paths_as_deep_as_allowed(tmp_path: Path) -> None:
    b = DataFileBuilder(flags=0x2, stack_depth=2, leak_depth=3, paths=[((1, 2, 3), *ONE)])
    assert datafile.read(write(tmp_path, b.build())).paths == (datafile.CallPath(2, *ONE),)


TOP = (1 << 64) - 1


def path(addr: int, allocs: int, frees: int, by_class: tuple[int, ...], freed: tuple[int, ...]) -> tuple:
    return ((addr,), allocs, frees, by_class, freed)


@pytest.mark.parametrize(
    ("builder", "message"),
    [
        (DataFileBuilder(paths=[path(0x1000, TOP, 0, (0,) * 4, (0,) * 4), path(0x2000, 1, 0, (0,) * 4, (0,) * 4)]),
         "corrupt: section PATH allocations add up past 64 bits"),
        (DataFileBuilder(paths=[path(0x1000, 1, TOP, (8,) * 4, (0,) * 4), path(0x2000, 1, 1, (0,) * 4, (0,) * 4)]),
         "corrupt: section PATH frees add up past 64 bits"),
        # One path's four size classes together are already past 64 bits.
        (DataFileBuilder(paths=[path(0x1000, 2, 0, (TOP, 1, 0, 0), (0,) * 4)]),
         "corrupt: section PATH bytes add up past 64 bits"),
        (DataFileBuilder(paths=[path(0x1000, 2, 2, (8,) * 4, (0, 0, TOP, 1))]),
         "corrupt: section PATH bytes freed add up past 64 bits"),
        (DataFileBuilder(bins=[(8, TOP, 0, 8, 0), (16, 1, 0, 16, 0)]),
         "corrupt: section BINS allocations add up past 64 bits"),
        (DataFileBuilder(bins=[(8, 1, TOP, 8, 0), (16, 1, 1, 16, 0)]),
         "corrupt: section BINS frees add up past 64 bits"),
        (DataFileBuilder(bins=[(8, 1, 0, TOP, 0), (16, 1, 0, 16, 0)]),
         "corrupt: section BINS bytes add up past 64 bits"),
        (DataFileBuilder(bins=[(8, 1, 1, 8, TOP), (16, 1, 1, 16, 16)]),
         "corrupt: section BINS bytes freed add up past 64 bits"),
    ],
)
def test_totals_past_64_bits(tmp_path: Path, builder: DataFileBuilder, message: str) -> None:
    # Every figure of the reduced profile is a sum over a section's entries;
    # a section whose totals overflow was found by the fuzzer to end in an
    # OverflowError from SQLite.
    assert refused(write(tmp_path, builder.build())) == message


def test_totals_of_exactly_64_bits(tmp_path: Path) -> None:
    b = DataFileBuilder(paths=[path(0x1000, TOP - 1, 0, (TOP - 1, 0, 0, 0), (0,) * 4),
                               path(0x2000, 1, 0, (1, 0, 0, 0), (0,) * 4)])
    assert sum(p.allocs for p in datafile.read(write(tmp_path, b.build())).paths) == TOP


def truncations(builder: DataFileBuilder, tag: str, payload: bytes) -> list[str]:
    """The message for the section's payload cut after each of its bytes
    but the last, without the byte counts some add."""
    messages = []
    for length in range(len(payload)):
        builder.payload_override[tag] = payload[:length]
        with pytest.raises(DataFileError) as info:
            datafile.parse(builder.build(), "x.mprof")
        messages.append(str(info.value).removeprefix("x.mprof: ").split(" (", 1)[0])
    return messages


def expected_cuts(tag: str, fields: list[tuple[int, str]]) -> list[str]:
    """Each field's size and name, in file order: the message for a cut
    inside each of its bytes."""
    return [f"corrupt: section {tag} payload ends inside {name}" for size, name in fields for _ in range(size)]


def test_refused_settings_must_end_with_a_nul(tmp_path: Path) -> None:
    b = rich()
    b.refused_settings = b"MPROF_DEPTH=5000"
    assert refused(write(tmp_path, b.build())) == "corrupt: PROG's refused settings do not end with a NUL"


def test_every_cut_of_the_program_and_modules_names_its_field() -> None:
    b = rich()
    table = b._table()
    program = b._payload("PROG", table, b._indices(table))
    # mprof(5): u32 length and the executable's path, then the same for the
    # command line, the leak suppressions and the refused settings.
    assert truncations(b, "PROG", program) == expected_cuts("PROG", [
        (4, "the executable path length"), (len(b.exe), "the executable path"),
        (4, "the command line length"), (len(b.cmdline), "the command line"),
        (4, "the leak suppressions length"), (len(b.lsan_suppressions), "the leak suppressions"),
        (4, "the refused settings length"), (len(b.refused_settings), "the refused settings")])
    b = rich()
    modules = b._payload("MODS", table, b._indices(table))
    # u64 count; each module 28 fixed bytes, its build-id, its path.
    fields = [(8, "the module count")]
    for n, module in enumerate(b.modules):
        fields += [(28, f"module {n}"), (len(module.build_id), f"the build-id of module {n}"),
                   (len(module.path), f"the path of module {n}")]
    assert truncations(b, "MODS", modules) == expected_cuts("MODS", fields)


@pytest.mark.parametrize("tag", ["ADDR", "NODE", "PATH", "TIME"])
def test_every_cut_of_a_varint_section_names_its_entry(tag: str) -> None:
    b = rich()
    table = b._table()
    indices = b._indices(table)
    payload = b._payload(tag, table, indices)
    # Where each entry starts: the payload written with the entries before it.
    head = 16 if tag == "PATH" else 8
    if tag == "ADDR":
        starts = [8 + sum(len(uv(a - p)) for p, a in zip([0, *table], table[:n], strict=False))
                  for n in range(len(table))]
    elif tag == "NODE":
        nodes, _ = b.tree()
        starts = [8 + sum(len(uv(up)) + len(uv(indices[addr])) for up, addr in nodes[:n]) for n in range(len(nodes))]
    elif tag == "TIME":
        times = [0, *(point[0] for point in b.timeline)]
        starts = [8 + sum(len(uv(t - p)) + sum(len(uv(v)) for v in point[1:])
                          for p, t, point in zip(times, times[1:], b.timeline[:n], strict=False))
                  for n in range(len(b.timeline))]
    else:
        starts = []
        for n in range(len(b.paths)):
            partial = rich()
            partial.nodes, refs = b.tree()
            partial.paths = [(ref, *entry[1:]) for ref, entry in zip(refs[:n], b.paths[:n], strict=False)]
            starts.append(len(partial._payload(tag, table, indices)))
    ends = [*starts[1:], len(payload)]
    fields = [(8, "the entry count")] + ([(8, "the field count")] if tag == "PATH" else [])
    assert head == sum(size for size, _ in fields)
    assert truncations(b, tag, payload) == expected_cuts(tag, fields + [
        (end - start, f"entry {n}") for n, (start, end) in enumerate(zip(starts, ends, strict=False))])


@pytest.mark.parametrize(("bins", "length", "message"), [
    ([(8, 1, 0, 8, 0)], 7, "payload is 7 bytes, too short for its count"),
    ([(8, 1, 0, 8, 0)], 67, "payload is 67 bytes, but 1 entry needs 68"),  # 8 + one 60-byte bin
    ([(8, 1, 0, 8, 0), (9, 1, 0, 9, 0)], 127, "payload is 127 bytes, but 2 entries need 128")])
def test_a_cut_of_fixed_entries_gives_the_size_they_need(bins: list, length: int, message: str) -> None:
    b = DataFileBuilder(bins=bins, summary=[2, 0, 17, 0] + [0] * (len(SUMMARY) - 4))
    table = b._table()
    payload = b._payload("BINS", table, b._indices(table))
    assert truncations(b, "BINS", payload)[length] == f"corrupt: section BINS {message}"


# --- compressed sections (header flag 16) -------------------------------------


def through_a_pipe(data: bytes, path: str = "x.mprof") -> datafile.DataFile | str:
    """What the reader makes of data as a stream: the data file, or the
    message without the path."""
    reader, writer = os.pipe()
    feeder = threading.Thread(target=lambda: (os.write(writer, data) if data else None, os.close(writer)))
    feeder.start()
    try:
        with open(reader, "rb") as stream:
            return datafile.parse(datafile.gather(stream, path), path)
    except DataFileError as error:
        return str(error).removeprefix(f"{path}: ")
    finally:
        feeder.join()


def both_ways(tmp_path: Path, data: bytes) -> str:
    """The one-line message for data as a file, which a stream of it must
    give too."""
    message = refused(write(tmp_path, data))
    assert through_a_pipe(data) == message
    return message


def without_compression(df: datafile.DataFile) -> datafile.DataFile:
    return dataclasses.replace(df, header=dataclasses.replace(df.header, flags=df.header.flags & ~0x10))


@pytest.mark.parametrize("level", [1, 3, 9])
def test_a_compressed_file_reads_as_the_uncompressed_one(tmp_path: Path, level: int) -> None:
    plain = datafile.read(write(tmp_path, rich().build()))
    data = dataclasses.replace(rich(), compress_level=level).build()
    assert len(data) < len(rich().build())
    df = datafile.read(write(tmp_path, data, "c.mprof"))
    assert df.header.flags == plain.header.flags | 0x10
    assert without_compression(df) == dataclasses.replace(plain, path=df.path)
    assert without_compression(datafile.parse(data, plain.path)) == plain
    piped = through_a_pipe(data, plain.path)
    assert isinstance(piped, datafile.DataFile) and without_compression(piped) == plain


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_a_compressed_file_is_inflated_a_step_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        chunk: int) -> None:
    # Steps of a few bytes: read and inflated at most chunk bytes at a time,
    # a step may leave input unread or output in zlib, and the next one must
    # take it up.
    plain = datafile.read(write(tmp_path, rich().build()))
    data = dataclasses.replace(rich(), compress_level=9).build()
    monkeypatch.setattr(datafile, "CHUNK", chunk)
    assert without_compression(datafile.parse(data, plain.path)) == plain
    piped = through_a_pipe(data, plain.path)
    assert isinstance(piped, datafile.DataFile) and without_compression(piped) == plain
    assert both_ways(tmp_path, data[:-1]).startswith(f"truncated: the compressed sections stop after {len(data) - 65}")


def test_the_checksum_covers_the_header_with_its_flag_and_the_inflated_sections(tmp_path: Path) -> None:
    data, offsets = dataclasses.replace(rich(), compress_level=6).build_layout()
    assert data[12] & 0x10
    (crc,) = struct.unpack_from("<I", data, offsets["END"] + 16)
    assert crc == zlib.crc32(data[: offsets["END"]])
    # The CRC of the file as it would be without the flag does not match.
    unflagged = dataclasses.replace(rich(), compress_level=6, crc=zlib.crc32(data[:12] + bytes([data[12] & ~0x10])
                                                                             + data[13 : offsets["END"]]))
    assert both_ways(tmp_path, unflagged.build()) == "corrupt: checksum mismatch"
    damaged = bytearray(data)
    damaged[offsets["NODE"] + 16 + 9] ^= 0x40
    assert both_ways(tmp_path, damaged[:64] + zlib.compress(damaged[64:])) == "corrupt: checksum mismatch"


def test_every_cut_of_a_compressed_file_is_refused_in_one_line(tmp_path: Path) -> None:
    data = dataclasses.replace(rich(), compress_level=6).build()
    wheres = []
    for length in range(len(data)):
        message = both_ways(tmp_path, data[:length])
        if length < 64:
            assert message in ("not an mprof data file (empty file)",
                               f"truncated: header needs 64 bytes, {length} remain"), length
            continue
        prefix = f"truncated: the compressed sections stop after {length - 64} bytes, "
        assert message.startswith(prefix), (length, message)
        wheres.append(message.removeprefix(prefix))
    # Each cut is in the section the bytes before it reached, in file order.
    order = [f"in section {tag.rstrip()}" for tag in ("PROG", "MODS", "SUMM", "BINS", "ADDR", "NODE", "PATH",
                                                      "TIME", "POOL", "END")] + ["after section END"]
    assert [order.index(where) for where in wheres] == sorted(order.index(where) for where in wheres)
    assert wheres[0] == "in section PROG" and wheres[-1] == "after section END"


def test_every_damaged_byte_of_a_compressed_file_is_refused_in_one_line(tmp_path: Path) -> None:
    data = dataclasses.replace(rich(), compress_level=6).build()
    whole = datafile.parse(data)
    same = 0
    for at in range(64, len(data)):
        damaged = bytearray(data)
        damaged[at] ^= 0x10
        try:
            # A bit deflate's code tables hold for a symbol the stream never
            # uses changes no byte of what it inflates to.
            assert datafile.parse(bytes(damaged)) == whole, at
            same += 1
            continue
        except DataFileError:
            pass
        message = both_ways(tmp_path, bytes(damaged))
        assert message.startswith(("corrupt: ", "truncated: ")), (at, message)
    # A handful of the file's bytes: 7 of rich()'s 1,200 or so.
    assert same < 10


def test_a_stream_that_is_not_zlib_is_damaged(tmp_path: Path) -> None:
    # The sections as they are, under a header that says they are compressed.
    flagged = dataclasses.replace(rich(), compress_level=6).build_layout()[0]
    assert both_ways(tmp_path, flagged) == (
        "corrupt: the compressed sections are damaged (incorrect header check), in section PROG")


def test_a_whole_stream_of_too_few_sections_is_named_by_the_parser(tmp_path: Path) -> None:
    data, offsets = dataclasses.replace(rich(), compress_level=6).build_layout()
    assert both_ways(tmp_path, data[:64] + zlib.compress(data[64 : offsets["END"]])) == (
        "truncated: file ends before section END")
    path_end = offsets["PATH"] + 16 + 17
    assert both_ways(tmp_path, data[:64] + zlib.compress(data[64:path_end])) == (
        "truncated: section PATH needs 84 bytes, 17 remain")


def test_bytes_after_end_inside_and_after_the_stream(tmp_path: Path) -> None:
    inside = dataclasses.replace(rich(), compress_level=6, trailing=b"\0\0\0").build()
    assert both_ways(tmp_path, inside) == "corrupt: 3 bytes after section END"
    after = dataclasses.replace(rich(), compress_level=6).build() + b"xyz"
    assert both_ways(tmp_path, after) == "corrupt: 3 bytes after the compressed sections"


def test_a_section_a_compressed_file_cannot_hold_is_refused_before_it_is_inflated(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A decompression bomb: 10 MB of zeros in about 10 KB, under a PROG
    that claims a terabyte.  A regular file's size says no before the
    payload is inflated (past the first step, which inflates the section
    header); a stream inflates what it holds, then learns its size and says
    the same."""
    header = DataFileBuilder(compress_level=1).build()[:64]
    stream = zlib.compress(struct.pack("<4sIQ", b"PROG", 0, 1 << 40) + bytes(10 << 20), 9)
    data = header + stream
    message = (f"truncated: section PROG needs {1 << 40} bytes, more than {len(stream)} bytes of compressed "
               f"sections hold")
    inflated: list[int] = []
    step = datafile._Inflating._step

    def counted(self: datafile._Inflating) -> bytes | None:
        piece = step(self)
        inflated.append(len(piece or b""))
        return piece

    monkeypatch.setattr(datafile._Inflating, "_step", counted)
    assert refused(write(tmp_path, data)) == message
    assert sum(inflated) == datafile.CHUNK
    inflated.clear()
    assert through_a_pipe(data) == message
    assert sum(inflated) == 16 + (10 << 20)
    # Within what the bytes may hold, the claim is taken at its word as far
    # as the stream goes.
    stream = zlib.compress(struct.pack("<4sIQ", b"PROG", 0, 1032 * len(stream) - 16) + bytes(10 << 20), 9)
    assert both_ways(tmp_path, header + stream).startswith("truncated: section PROG needs ")


def test_a_stream_that_inflates_on_after_end_is_refused_within_a_bound(tmp_path: Path) -> None:
    data = dataclasses.replace(rich(), compress_level=6).build_layout()[0]
    bomb = data[:64] + zlib.compress(data[64:] + bytes(40 << 20), 9)
    assert len(bomb) < 64 << 10
    assert both_ways(tmp_path, bomb) == f"corrupt: more than {datafile.TRAILING_COUNTED} bytes after section END"
