"""A Rust program, tests/targets/rust_workers.rs, built with Debian's rustc
in each of Rust's two symbol manglings, legacy and v0, profiled and
reported: its functions read as Rust paths, without the legacy hash or the
crate disambiguators unless asked for in full, in the tables, the JSON and
the exports; the figures are the program's known allocations."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e_support import MANGLINGS, Shared, mprof, rust_workers_run, table
from mprof.export import profile_pb2

pytestmark = pytest.mark.rust

# What no name may show: a symbol left mangled, or a legacy escape ($LT$).
RAW = re.compile(r"\$|(^|[ ;>])_[RZ]\w")
BASE62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass
class Profiled:
    mangling: str
    program: Path
    profile: Path
    report: dict[str, Any]  # mprof report --format json of the profile


@pytest.fixture(scope="module", params=sorted(MANGLINGS))
def profiled(request: pytest.FixtureRequest, shared: Shared) -> Profiled:
    program, profile = rust_workers_run(shared, request.param)
    report = json.loads(mprof("report", "--format", "json", profile).stdout)
    return Profiled(request.param, program, profile, report)


def leak_row(text: str) -> str:
    """The leak table's one row (the line after it says what the runtimes keep)."""
    [row] = [row for row in table(text, "Memory leak table") if re.match(r"\s+\d", row)]
    return row


def symbol(program: Path, function: str) -> str:
    """The symbol rustc gave rust_workers::FUNCTION, from the symbol table."""
    [name] = [line.split()[-1] for line in subprocess.run(["nm", program], capture_output=True, text=True,
                                                          check=True).stdout.splitlines()
              if re.search(rf"12rust_workers{len(function)}{function}(17h[0-9a-f]{{16}}E)?$", line)]
    return name


def full_name(profiled: Profiled, function: str) -> str:
    """rust_workers::FUNCTION whole, as rustc-demangle prints it without its
    alternate flag, worked out from the program's own symbol: a legacy
    symbol's hash is its last part; a v0 symbol's crate disambiguator is
    s<base-62 digits>_ after the crate root's C, worth the digits' value
    plus 2 (rustc-demangle's v0 integer_62 and disambiguator)."""
    name = symbol(profiled.program, function)
    if profiled.mangling == "legacy":
        match = re.fullmatch(rf"_ZN12rust_workers{len(function)}{function}17(h[0-9a-f]{{16}})E", name)
        assert match, name
        return f"rust_workers::{function}::{match.group(1)}"
    match = re.fullmatch(rf"_RNvCs([0-9a-zA-Z]+)_12rust_workers{len(function)}{function}", name)
    assert match, name
    value = 0
    for digit in match.group(1):
        value = value * 62 + BASE62.index(digit)
    return f"rust_workers[{value + 2:x}]::{function}"


def test_the_leak_is_leak_registrys_by_its_rust_name(profiled: Profiled) -> None:
    # memcheck: "20,000 bytes in 20 blocks are definitely lost" (Box::leak's
    # blocks, their pointers dropped), and possibly lost the two threads'
    # DTVs, glibc's, which the table counts under it.  The share is of all
    # bytes kept, the DTVs' too.
    row = leak_row(mprof("report", "--no-pager", "--wide", "--tables", "leaks", profiled.profile).stdout)
    figures = row.split()
    assert figures[:2] == ["20", "20,000"] and figures[3:5] == ["definitely", "lost"], row
    assert " > rust_workers::main > rust_workers::leak_registry > " in row
    assert not RAW.search(row), row
    [leak] = [leak for leak in profiled.report["leaks"] if leak["kind"] in ("definitely lost", "indirectly lost")]
    assert (leak["kind"], leak["runtime"]) == ("definitely lost", "")
    assert (leak["allocs"], leak["kept_objects"], leak["kept_bytes"]) == (20, 20, 20_000)
    names = [frame["function"] for frame in leak["frames"]]
    assert names[names.index("rust_workers::main") + 1] == "rust_workers::leak_registry"


def test_the_peak_is_held_by_worker_and_make_record(profiled: Profiled) -> None:
    text = mprof("report", "--no-pager", "--wide", "--tables", "peak", profiled.profile).stdout
    rows = [row for row in table(text, "Peak table") if " > rust_workers::worker > rust_workers::make_record > " in row]
    # The records' boxes and labels: two paths under make_record, while the
    # threads ran.
    assert len(rows) == 2, text
    paths = [path["path"] for path in profiled.report["peak"]["paths"]]
    assert sum(" > rust_workers::worker > rust_workers::make_record > " in path for path in paths) == 2


def test_no_name_is_raw_and_the_programs_own_have_no_hash(profiled: Profiled) -> None:
    # Every row of every table, on the first screen as a user reads it:
    # legacy escapes and raw symbols never; a hash or crate only where two
    # functions would otherwise read the same (none of the program's own).
    text = mprof("report", "--no-pager", profiled.profile).stdout
    assert not RAW.search(text), text
    model = profiled.report
    own = {entry["function"] for entry in model["call_graph"] if entry["module"] == str(profiled.program)
           and entry["file"].endswith("rust_workers.rs")}
    braces = "{closure#0}" if profiled.mangling == "v0" else "{{closure}}"
    assert own == {"rust_workers::main", "rust_workers::worker", "rust_workers::make_record",
                   "rust_workers::leak_registry", f"rust_workers::main::{braces}",
                   f"rust_workers::main::{braces}::{braces}"}


def test_full_names_show_the_hash_or_the_crate(profiled: Profiled) -> None:
    row = leak_row(mprof("report", "--no-pager", "--wide", "--full-names", "--tables", "leaks",
                         profiled.profile).stdout)
    registry = full_name(profiled, "leak_registry")
    assert f" > {full_name(profiled, 'main')} > {registry} > " in row
    model = profiled.report
    [entry] = [e for e in model["call_graph"] if e["function"] == "rust_workers::leak_registry"]
    assert entry["signature"] == registry


def test_the_figures_are_the_programs_known_allocations(profiled: Profiled) -> None:
    model = profiled.report
    graph = {entry["function"]: entry for entry in model["call_graph"]}
    # Per record a 32-byte Box and a 14-byte label, 5,000 records per thread;
    # per thread the vector's 32 bytes and its 11 reallocs, 131,008 bytes.
    assert (graph["rust_workers::make_record"]["total_bytes"], graph["rust_workers::make_record"]["called"]) == (
        2 * 5_000 * (32 + 14), 2 * 5_000 * 2)
    assert (graph["rust_workers::worker"]["total_bytes"], graph["rust_workers::worker"]["called"]) == (
        2 * (5_000 * (32 + 14) + 32 + 131_008), 2 * (5_000 * 2 + 1 + 11))
    assert (graph["rust_workers::leak_registry"]["total_bytes"], graph["rust_workers::leak_registry"]["called"]) == (
        20 * 1_000, 20)
    # The direct allocators are std's, by their Rust names: realloc grows
    # the two vectors and nothing else; alloc made every block left at exit.
    direct = {row["function"]: row for row in model["direct"]}
    realloc = direct["alloc::alloc::realloc"]
    assert (realloc["calls"], realloc["bytes"], realloc["kept_bytes"]) == (2 * 11, 2 * 131_008, 0)
    alloc = direct["alloc::alloc::alloc"]
    assert (alloc["kept_objects"], alloc["kept_bytes"]) == (20, 20_000)
    text = mprof("report", "--no-pager", "--tables", "direct", profiled.profile).stdout
    # A library allocator's row goes on with the program's functions it
    # allocated for: "  (via rust_workers::make_record 95%, ...)".
    names = [row.split("  (via ")[0].split()[-1] for row in table(text, "Direct allocation table")]
    assert names[:3] == ["<total>", "alloc::alloc::alloc", "alloc::alloc::realloc"]


def test_collapsed_stacks_carry_rust_names(profiled: Profiled) -> None:
    [line] = mprof("export", "--format", "collapsed", "--sample", "leak_space", profiled.profile).stdout.splitlines()
    stack, count = line.rsplit(" ", 1)
    assert count == "20000"
    frames = stack.split(";")
    below = frames[frames.index("rust_workers::main"):]
    assert below[:2] == ["rust_workers::main", "rust_workers::leak_registry"] and below[-1] == "alloc::alloc::alloc"
    assert not RAW.search(stack), stack
    full = mprof("export", "--format", "collapsed", "--sample", "leak_space", "--full-names",
                 profiled.profile).stdout
    assert f";{full_name(profiled, 'leak_registry')};" in full


def test_pprof_functions_carry_rust_names(profiled: Profiled, tmp_path: Path) -> None:
    output = tmp_path / "rust.pb.gz"
    mprof("export", "--format", "pprof", "-o", output, profiled.profile)
    profile = profile_pb2.Profile()
    profile.ParseFromString(gzip.decompress(output.read_bytes()))
    strings = profile.string_table
    names = {strings[function.name]: strings[function.system_name] for function in profile.function}
    for function in ("worker", "make_record", "leak_registry"):
        assert names[f"rust_workers::{function}"] == full_name(profiled, function)
    assert not [name for name in names if RAW.search(name)]
