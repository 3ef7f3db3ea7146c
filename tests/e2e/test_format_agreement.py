"""The monitor's writer against mprof(5): files the real monitor wrote are
rebuilt, field by field, by the test suite's own writer of the man page's
format (tests/python/datafile_builder.py), and must come out byte for byte
the same."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest
from e2e_support import REPO_ROOT, Run, Targets

sys.path.insert(0, str(REPO_ROOT / "tests" / "python"))
from datafile_builder import DataFileBuilder, ModuleSpec  # noqa: E402

from mprof.reducer.records import DataFile  # noqa: E402


def rebuilt(data: DataFile) -> bytes:
    h = data.header
    return DataFileBuilder(
        flags=h.flags, stack_depth=h.stack_depth, leak_depth=h.leak_depth, pid=h.pid, ppid=h.ppid,
        start_unix_ns=h.start_unix_ns, elapsed_ns=h.elapsed_ns,
        exe=data.program.exe.encode("utf-8", "surrogateescape"),
        cmdline=b"".join(arg.encode("utf-8", "surrogateescape") + b"\0" for arg in data.program.argv),
        modules=[ModuleSpec(m.bias, m.start, m.end, int(m.unloaded), m.build_id,
                            m.path.encode("utf-8", "surrogateescape")) for m in data.modules],
        summary=[data.summary[name] for name in data.summary.field_names()],
        bins=[(b.size, b.allocs, b.frees, b.bytes, b.bytes_freed) for b in data.bins],
        sites=[(s.addr, s.calls, s.frees, tuple(s.bytes), tuple(s.freed)) for s in data.sites],
        leaks=[(c.addrs, c.allocs, c.frees, c.bytes, c.bytes_freed) for c in data.leaks],
        pairs=[(p.caller, p.callee, p.calls, tuple(p.bytes)) for p in data.pairs],
    ).build()


@pytest.mark.parametrize("program, arguments, settings", [
    ("widgets", ["2000"], {}),
    ("widgets", ["2000"], {"MPROF_CALL_GRAPH": "0", "MPROF_LEAK_DEPTH": "3"}),
    ("cxx", [], {}),
    ("dlclose_main", ["plugin"], {}),
])
def test_monitor_files_are_the_man_pages_format(targets: Targets, profile: Callable[..., Run], program: str,
                                                arguments: list[str], settings: dict[str, str]) -> None:
    if program == "widgets":
        executable = REPO_ROOT / "build" / "widgets"
    elif program == "dlclose_main":
        executable = targets.build("dlclose_main", "-ldl")
        arguments = [str(targets.build("plugin.so", source="plugin.c", shared=True))]
    else:
        executable = targets.build(program)
    run = profile([executable, *arguments], **settings)
    data = run.data()
    assert data.sites and data.leaks and data.bins
    assert run.output.read_bytes() == rebuilt(data)
