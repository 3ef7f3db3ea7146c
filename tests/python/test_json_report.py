"""The JSON report holds every value of the file, addresses in hex."""

from __future__ import annotations

import json

import pytest

from datafile_builder import DataFileBuilder
from mprof.reducer import datafile
from mprof.report.json_report import datafile_to_json
from mprof.report.text_summary import datafile_to_text
from samples import MAIN_BUILD_ID, rich


def report() -> dict[str, object]:
    out = datafile_to_json(datafile.parse(rich().build(), "x.mprof"))
    # Must survive a round trip through real JSON unchanged.
    assert json.loads(json.dumps(out)) == out
    return out


def test_top_level_keys() -> None:
    assert list(report()) == [
        "file", "header", "program", "modules", "summary", "bins", "nodes", "paths", "pools",
    ]  # fmt: skip


def test_pools() -> None:
    # rich()'s three pool frames, in their order: a name, the malloc-like
    # blocks' (no creator, no name), a name that is not UTF-8.
    assert report()["pools"] == [{"creator": "0x555555555400", "name": "parser arena"},
                                 {"creator": "0x0", "name": ""},
                                 {"creator": "0x555555555500", "name": "caf\udce9"}]


def test_header_and_program() -> None:
    out = report()
    assert out["header"] == {
        "version": 7,
        "flags": 7,
        "call_graph": True,
        "final": True,
        "checkpoint": False,
        "end_signal": 0,
        "forked": True,
        "compressed": False,
        "stack_depth": 32,
        "leak_depth": 4,
        "pid": 31337,
        "ppid": 31336,
        "start_unix_ns": 1_700_000_000_123_456_789,
        "elapsed_ns": 2_500_000_000,
    }
    assert out["program"] == {"exe": "/usr/bin/prog", "argv": ["prog", "-v", "caf\udce9"],
                              "lsan_suppressions": "leak:libfoo.so\n# caf\udce9\n",
                              "refused_settings": ["MPROF_DEPTH=5000", "MPROF_BLOCKS=m\udce9p"]}


def test_a_compressed_file_says_so_and_holds_the_same() -> None:
    builder = rich()
    builder.compress_level = 6
    out = datafile_to_json(datafile.parse(builder.build(), "x.mprof"))
    header = out.pop("header")
    assert (header["flags"], header["compressed"]) == (7 | 16, True)
    plain = report()
    assert plain.pop("header") == {**header, "flags": 7, "compressed": False}
    assert out == plain


def test_modules() -> None:
    modules = report()["modules"]
    assert isinstance(modules, list)
    assert modules[0] == {
        "path": "",
        "bias": "0x555555554000",
        "start": "0x555555554000",
        "end": "0x55555555a000",
        "unloaded": False,
        "build_id": MAIN_BUILD_ID.hex(),
    }
    assert modules[2]["unloaded"] is True
    assert modules[2]["build_id"] == "deadbeef0102"
    assert modules[3]["build_id"] == ""


def test_summary_fields_and_derived() -> None:
    summary = report()["summary"]
    assert isinstance(summary, dict)
    assert summary["allocs"] == 100
    assert summary["frees"] == 60
    assert summary["bytes_allocated"] == 5000
    assert summary["bytes_freed"] == 3000
    assert summary["monitor_bytes"] == 1021
    assert summary["kept_objects"] == 40
    assert summary["kept_bytes"] == 2000
    assert summary["average_size"] == 50.0
    assert summary["elapsed_seconds"] == 2.5
    assert summary["allocation_rate_bytes_per_second"] == 2000.0
    assert len(summary) == 39 + 5


def test_summary_derived_when_nothing_happened() -> None:
    out = datafile_to_json(datafile.parse(DataFileBuilder(elapsed_ns=0).build()))
    summary = out["summary"]
    assert summary["average_size"] == 0.0
    assert summary["allocation_rate_bytes_per_second"] == 0.0
    assert out["modules"] == out["bins"] == out["nodes"] == out["paths"] == []


def test_bins() -> None:
    bins = report()["bins"]
    assert isinstance(bins, list)
    assert [(b["size"], b["label"]) for b in bins] == [
        (0, "0"), (8, "8"), (1024, "1024"), (1025, ">1024"),
    ]  # fmt: skip
    assert bins[3] == {
        "size": 1025,
        "label": ">1024",
        "allocs": 3,
        "frees": 1,
        "kept_objects": 2,
        "bytes": 9000,
        "bytes_freed": 3000,
        "kept_bytes": 6000,
        "temporaries": 0,
        "peak_blocks": 0,
        "peak_bytes": 0,
    }
    assert (bins[1]["temporaries"], bins[1]["peak_blocks"], bins[1]["peak_bytes"]) == (3, 4, 32)


def test_nodes_and_paths() -> None:
    out = report()
    # Made outermost first, path by path: 0x...300 > 0x...200 > 0x...123,
    # then 0x7f...456 under the same two, then 5 > 4 > 3 > 2 > 1.
    assert out["nodes"] == [
        {"parent": None, "addr": "0x555555555300"}, {"parent": 0, "addr": "0x555555555200"},
        {"parent": 1, "addr": "0x555555555123"}, {"parent": 1, "addr": "0x7f0000030456"},
        {"parent": None, "addr": "0x5"}, {"parent": 4, "addr": "0x4"}, {"parent": 5, "addr": "0x3"},
        {"parent": 6, "addr": "0x2"}, {"parent": 7, "addr": "0x1"},
    ]
    paths = out["paths"]
    assert isinstance(paths, list)
    assert paths[0] == {
        "node": 2,
        "addrs": ["0x555555555123", "0x555555555200", "0x555555555300"],
        "allocs": 70,
        "frees": 40,
        "kept_objects": 30,
        "bytes": {"s": 100, "m": 200, "l": 300, "x": 400},
        "bytes_total": 1000,
        "freed": {"s": 10, "m": 20, "l": 30, "x": 40},
        "freed_total": 100,
        "kept_bytes": {"s": 90, "m": 180, "l": 270, "x": 360},
        "kept_bytes_total": 900,
        "temporaries": 7,
        "peak_blocks": 25,
        "peak_bytes": 800,
    }
    assert [(path["node"], path["addrs"]) for path in paths[1:]] == [
        (3, ["0x7f0000030456", "0x555555555200", "0x555555555300"]), (8, ["0x1", "0x2", "0x3", "0x4", "0x5"]),
        (None, [])]


def test_text_summary_of_every_field() -> None:
    # samples.rich's figures, line for line; the undecodable byte in its
    # command line shown escaped, so the text goes to a strict UTF-8 stream.
    assert datafile_to_text(datafile.parse(rich().build())) == (
        "program:   /usr/bin/prog\n"
        "command:   prog -v 'caf\\xe9'\n"
        "pid:       31337 (parent 31336, final, fork child)\n"
        "allocs:    100\n"
        "frees:     60\n"
        "bytes:     5000 allocated, 3000 freed\n"
        "kept:      40 objects, 2000 bytes\n"
        "max live:  45 objects, 2600 bytes\n")


@pytest.mark.parametrize(("flags", "end_signal", "kind"), [
    (0x1, 0, "snapshot"), (0x3, 0, "final"), (0x3, 11, "final, ended by SIGSEGV"), (0x9, 0, "checkpoint"),
    (0x5, 0, "snapshot, fork child")])
def test_text_summary_says_what_kind_of_file(flags: int, end_signal: int, kind: str) -> None:
    text = datafile_to_text(datafile.parse(DataFileBuilder(flags=flags, end_signal=end_signal).build()))
    assert text.splitlines()[2] == f"pid:       4242 (parent 1, {kind})"
    assert text.splitlines()[3:5] == ["allocs:    0", "frees:     0"]


def test_text_summary_values() -> None:
    text = datafile_to_text(datafile.parse(rich().build()))
    assert "program:   /usr/bin/prog\n" in text
    assert "command:   prog -v 'caf\\xe9'\n" in text
    assert "pid:       31337 (parent 31336, final, fork child)\n" in text
    assert "kept:      40 objects, 2000 bytes\n" in text
    assert "max live:  45 objects, 2600 bytes\n" in text


def test_text_summary_without_a_command_line_shows_the_program() -> None:
    # An empty /proc/pid/cmdline (a kernel thread, a process that cleared it).
    text = datafile_to_text(datafile.parse(DataFileBuilder(exe=b"/usr/bin/prog", cmdline=b"").build()))
    assert text.splitlines()[:2] == ["program:   /usr/bin/prog", "command:   /usr/bin/prog"]
