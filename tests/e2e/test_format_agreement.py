"""The monitor's writer against mprof(5): files the real monitor wrote are
rebuilt, field by field, by the test suite's own writer of the man page's
format (tests/python/datafile_builder.py), and must come out byte for byte
the same, once the monitor's sections are inflated: it always compresses
them (header flag 16), one zlib stream with nothing after it.  That checks
the encoding; the figures the reader got out of each file are checked
against what the program is known to do."""

from __future__ import annotations

import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import REPO_ROOT, Run, Targets, in_module, module_named
from mprof.reducer import tree

sys.path.insert(0, str(REPO_ROOT / "tests" / "python"))
from datafile_builder import DataFileBuilder, ModuleSpec  # noqa: E402
from mprof.reducer.records import DataFile  # noqa: E402

WIDGETS, RED = 2000, 999  # widgets 2000 prints its count of red widgets, checked below
WIDGET_SIZE = 204


def inflated(raw: bytes) -> bytes:
    """A compressed file as it is before compression: its header, then its
    sections inflated from the one stream that must end the file."""
    assert raw[12] & 0x10, "the monitor always compresses"
    stream = zlib.decompressobj()
    sections = stream.decompress(raw[64:])
    assert stream.eof and not stream.unused_data
    return raw[:64] + sections


def rebuilt(data: DataFile) -> bytes:
    """The file as the builder writes it from what the reader got, its
    sections not deflated (flag 16 is in the flags it is given)."""
    h = data.header
    return DataFileBuilder(
        flags=h.flags, stack_depth=h.stack_depth, leak_depth=h.leak_depth, pid=h.pid, ppid=h.ppid,
        start_unix_ns=h.start_unix_ns, elapsed_ns=h.elapsed_ns,
        exe=data.program.exe.encode("utf-8", "surrogateescape"),
        cmdline=b"".join(arg.encode("utf-8", "surrogateescape") + b"\0" for arg in data.program.argv),
        modules=[ModuleSpec(m.bias, m.start, m.end, int(m.unloaded), m.build_id,
                            m.path.encode("utf-8", "surrogateescape")) for m in data.modules],
        summary=[data.summary[name] for name in data.summary.field_names()],
        bins=[(b.size, b.allocs, b.frees, b.bytes, b.bytes_freed, b.temporaries, b.peak_blocks, b.peak_bytes)
              for b in data.bins],
        nodes=[(index - node.parent if node.parent >= 0 else 0, node.addr) for index, node in enumerate(data.nodes)],
        paths=[(path.node + 1, path.allocs, path.frees, tuple(path.bytes), tuple(path.freed), path.temporaries,
                path.peak_blocks, path.peak_bytes) for path in data.paths],
        timeline=[(p.ns, p.live_bytes, p.live_blocks, p.resident_bytes, p.mapped_bytes) for p in data.timeline],
        pools=[(frame.creator, frame.name.encode("utf-8", "surrogateescape")) for frame in data.pools],
        leak=None if data.leaks is None else (
            data.leaks.flags, data.leaks.threads_stopped, data.leaks.threads_unstopped, data.leaks.root_bytes,
            data.leaks.block_bytes, data.leaks.scan_ns),
        leak_entries=[] if data.leaks is None else [(path, *kinds) for path, kinds in sorted(data.leaks.kinds.items())],
    ).build()


def known_figures(program: str, data: DataFile, run: Run, settings: dict[str, str]) -> None:
    """What the program does, counted by hand from its source."""
    s = data.summary
    if program == "widgets":
        assert run.completed.stdout == f"widgets {WIDGETS} red {RED} blue {WIDGETS - RED}\n"
        blue = WIDGETS - RED
        assert (s.allocs, s.frees, s.bytes_allocated, s.bytes_freed) == (
            WIDGETS, blue, WIDGETS * WIDGET_SIZE, blue * WIDGET_SIZE)
        assert [(b.size, b.allocs, b.frees) for b in data.bins] == [(WIDGET_SIZE, WIDGETS, blue)]
        [site] = tree.totals(data).sites
        assert (site.calls, site.frees, site.bytes, site.freed) == (
            WIDGETS, blue, (0, WIDGETS * WIDGET_SIZE, 0, 0), (0, blue * WIDGET_SIZE, 0, 0))
        depth = int(settings.get("MPROF_LEAK_DEPTH", "5"))
        assert data.header.leak_depth == depth
        chains = tree.totals(data).leaks
        assert sorted((len(c.addrs), c.allocs, c.frees) for c in chains) == [(depth, RED, 0), (depth, blue, blue)]
        assert data.header.call_graph == (settings.get("MPROF_CALL_GRAPH") != "0")
        # With the call graph, each allocation adds one call to each pair of
        # its chain: main's two producers' pairs into make_widget's site.
        into_site = sorted(p.calls for p in tree.totals(data).pairs if p.callee == site.addr)
        assert into_site == (sorted([blue, RED]) if data.header.call_graph else [])
    elif program == "arena":
        # arena.c: 100,000 objects, 100,000 more, then 1,001, from one pool
        # carved from one backing block of 8 MiB and its 16-byte header.
        assert (s.allocs, s.frees, s.pool_alloc_calls, s.pool_resets) == (201_002, 200_000, 201_001, 2)
        assert (s.backing_blocks, s.backing_bytes, s.backing_frees) == (1, (8 << 20) + 16, 0)
        [frame] = data.pools
        assert frame.name == "parser arena"
        assert in_module(frame.creator, module_named(data, Path(run.completed.args[0])))
    elif program == "cxx":
        # cxx.cc: 12 calls of new (two fail), 9 of delete (one of NULL).
        assert (s.new_calls, s.delete_calls, s.failed_allocs, s.free_null) == (12, 9, 2, 1)
    else:
        plugin = module_named(data, Path(run.completed.args[1]))
        assert plugin.unloaded
        [site] = [site for site in tree.totals(data).sites if in_module(site.addr, plugin)]
        assert (site.calls, site.frees, sum(site.bytes), sum(site.freed)) == (3, 2, 3 * 77, 2 * 77)


@pytest.mark.parametrize("program, arguments, settings", [
    ("widgets", [str(WIDGETS)], {}),
    ("widgets", [str(WIDGETS)], {"MPROF_CALL_GRAPH": "0", "MPROF_LEAK_DEPTH": "3"}),
    ("cxx", [], {}),
    ("arena", [], {}),
    ("dlclose_main", ["plugin"], {}),
])
def test_monitor_files_are_the_man_pages_format(targets: Targets, profile: Callable[..., Run], program: str,
                                                arguments: list[str], settings: dict[str, str]) -> None:
    if program == "widgets":
        executable = REPO_ROOT / "build" / "widgets"
    elif program == "arena":
        executable = targets.build("arena", f"-I{REPO_ROOT / 'monitor'}")
    elif program == "dlclose_main":
        executable = targets.build("dlclose_main", "-ldl")
        arguments = [str(targets.build("plugin.so", source="plugin.c", shared=True))]
    else:
        executable = targets.build(program)
    run = profile([executable, *arguments], **settings)
    data = run.data()
    assert inflated(run.output.read_bytes()) == rebuilt(data)
    known_figures(program, data, run, settings)
