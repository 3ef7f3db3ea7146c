"""The first screen of a report on real programs names the developer's own
code: a C++ program at -O2 (tests/targets/cache_server.cc), whose paths
are mostly the standard library's inlined templates, a two-thread Rust
program (tests/targets/rust_workers.rs) and a stripped C program.  Each row
of the peak, temporaries, leak and direct tables, as the default report
prints it, names the function the program's structure says is
responsible; the figures are the programs' known allocations."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from e2e_support import BUILD, Shared, mprof, rust_workers_run, table
from mprof.cli.inputs import load_profile

# A row's figures, then its path or name.
ROW = re.compile(r"\s*([\d,]+)\s+([\d,]+)\s+(\(\d+\))?\s+(.*)")


def rows(text: str, heading: str) -> list[tuple[str, str, str]]:
    """A table's rows: (first figure, second figure, path), not its notes."""
    return [(match[1], match[2], match[4]) for match in map(ROW.fullmatch, table(text, heading)) if match]


@pytest.fixture(scope="module")
def cxx_report(cache_server_run: Path) -> str:
    return mprof("report", cache_server_run).stdout


def check_cxx_peak_rows(report: str) -> None:
    peak = {(blocks, size): path for blocks, size, path in rows(report, "Peak table")}
    # The 2,000 vectors of 64 ints, the map's nodes (72 bytes) and their
    # copies of the keys (33 bytes): Cache::get's.  The sessions and their
    # vectors of 100 ints: create_session's.
    for figures in (("2,000", "512,000"), ("2,000", "144,000"), ("2,000", "66,000")):
        assert peak[figures].startswith("main > Cache::get > "), peak[figures]
    assert peak[("100", "40,000")].startswith("main > create_session > ")
    assert peak[("100", "4,800")] == "main > create_session"
    # Folded, the standard library's frames say so.
    assert re.search(r" > \[\d+ std::\] > ", peak[("2,000", "512,000")])


# A leak row's path begins with its kind, in memcheck's words.
LEAK_KIND = re.compile(r"(definitely lost|indirectly lost|possibly lost|still reachable|unknown)  (.*)")


def check_cxx_temporaries_and_leaks(report: str) -> None:
    [row] = table(report, "Temporary allocations")
    count, share, path = row.split(None, 2)
    assert (count, share) == ("300,000", "(100)") and path.startswith("main > format_line > ")
    # The sessions (48 bytes), whose pointers main drops, and their vectors
    # of 100 ints, which only the sessions point to: memcheck's "4,800 bytes
    # in 100 blocks are definitely lost" and "40,000 bytes in 100 blocks are
    # indirectly lost", both under create_session.
    leaks = [(objects, size, LEAK_KIND.fullmatch(path)) for objects, size, path in rows(report, "Memory leak table")]
    assert [(objects, size, kind and kind[1], kind and kind[2].split(" > ")[:2]) for objects, size, kind in leaks] \
        == [("100", "40,000", "indirectly lost", ["main", "create_session"]),
            ("100", "4,800", "definitely lost", ["main", "create_session"])]


def direct_rows(text: str) -> dict[str, str]:
    """The direct table's rows by their bytes (the column after % mem)."""
    return {line[6:19].strip(): line for line in table(text, "Direct allocation table")[1:]}


def check_cxx_direct_rows(report: str) -> None:
    direct = direct_rows(report)
    # The line strings of format_line, the vectors of Cache::get (512,000)
    # and create_session (40,000), the nodes of the map.
    assert direct["12,300,000"].endswith("  (via format_line 100%)")
    assert direct["552,000"].endswith("  (via Cache::get 92%, create_session 7%)")
    assert direct["144,000"].endswith("  (via Cache::get 100%)")
    assert direct["4,800"].endswith(" create_session")


@pytest.mark.slow
def test_the_cxx_peak_rows_name_the_cache_and_the_sessions(cxx_report: str) -> None:
    check_cxx_peak_rows(cxx_report)


@pytest.mark.slow
def test_the_cxx_temporaries_and_leaks_name_format_line_and_create_session(cxx_report: str) -> None:
    check_cxx_temporaries_and_leaks(cxx_report)


@pytest.mark.slow
def test_the_cxx_direct_rows_say_which_own_functions_the_library_allocated_for(cxx_report: str) -> None:
    check_cxx_direct_rows(cxx_report)


@pytest.mark.slow
@pytest.mark.parametrize("installed", ["/usr/lib", "/usr/libexec"])
def test_a_program_installed_under_the_systems_directories_keeps_its_own_frames(
        cache_server_program: Path, tmp_path: Path, installed: str) -> None:
    """A package's program in /usr/lib/PACKAGE or /usr/libexec, run through
    a symbolic link from a bin directory (as /usr/bin/firefox is), is the
    program's own code, though the system's libraries share its directory:
    its rows name its own functions as the program built in place does.
    The directory is the test's own, removed at its end."""
    if not os.access(installed, os.W_OK):
        pytest.skip(f"making a directory in {installed} needs root")  # test_folding.py checks the rule itself
    directory = Path(tempfile.mkdtemp(prefix="mprof-test-", dir=installed))
    try:
        program = directory / "cache_server"
        shutil.copy(cache_server_program, program)
        link = tmp_path / "bin" / "cache_server"
        link.parent.mkdir()
        link.symlink_to(program)
        output = tmp_path / "cache_server.mprof"
        assert mprof("run", "--quiet", "-o", output, link).stdout == "cache 2000 entries, total 12138000\n"
        report = mprof("report", output).stdout
    finally:
        shutil.rmtree(directory)
    assert [run.program for run in load_profile([output]).runs] == [str(program)]  # where it is, not the link
    check_cxx_peak_rows(report)
    check_cxx_temporaries_and_leaks(report)
    check_cxx_direct_rows(report)


@pytest.fixture(scope="module")
def rust_report(shared: Shared) -> str:
    _, profile = rust_workers_run(shared, "legacy")
    return mprof("report", profile).stdout


@pytest.mark.rust
def test_the_rust_rows_name_the_workers_and_the_registry(rust_report: str) -> None:
    # Each worker's 5,000 records (32 bytes) and their labels: make_record's;
    # the vector it pushes them onto, grown by realloc: worker's.  The three
    # largest at the peak, whichever thread was where.
    peak = rows(rust_report, "Peak table")
    for _, _, path in peak[:3]:
        owner = "rust_workers::worker" if path.endswith("alloc::alloc::realloc") else "rust_workers::make_record"
        assert f" > {owner} > " in path, peak
    # The API each own frame called stays beside it, folded library frames after: Vec::push and Box::new.
    assert any(re.search(r" > rust_workers::worker > alloc::vec::Vec<>::push > \[\d+ alloc::\] > "
                         r"alloc::alloc::realloc$",
                         path) for _, _, path in peak[:3]), peak
    assert any(re.search(r" > rust_workers::make_record > alloc::boxed::Box<>::new > \[\d+ alloc::\] > "
                         r"alloc::alloc::alloc$", path) for _, _, path in peak[:3]), peak
    [(objects, size, path)] = rows(rust_report, "Memory leak table")
    assert (objects, size) == ("20", "20,000") and "rust_workers::leak_registry > " in path
    direct = direct_rows(rust_report)
    allocated = [line for line in direct.values() if line.split("  (via ")[0].endswith(" alloc::alloc::alloc")]
    assert len(allocated) == 1 and "  (via rust_workers::make_record " in allocated[0]
    for text in (rust_report.split("Allocation bin table")[0], *direct.values()):
        assert not re.search(r"::h[0-9a-f]{16}\b|\b_R[A-Z]|\$", text)


@pytest.mark.parametrize("exported", [False, True], ids=["stripped", "stripped but for main"])
def test_a_stripped_program_is_named_once_with_the_fix(tmp_path: Path, exported: bool) -> None:
    """widgets stripped whole, or but for main in .dynsym (Debian's gawk keeps 38 symbols): its own frames read
    widgets+0x... either way, and one warning says so."""
    program = tmp_path / "widgets"
    if exported:
        subprocess.run(["gcc", "-O0", "-o", program, Path(__file__).parents[2] / "examples" / "widgets.c",
                        "-Wl,--export-dynamic-symbol=main"], check=True)
    else:
        shutil.copy(BUILD / "widgets", program)
    subprocess.run(["strip", "--strip-all", program], check=True)
    dynamic = subprocess.run(["nm", "-D", "--defined-only", program], capture_output=True, text=True).stdout
    assert (" T main\n" in dynamic) == exported
    output = tmp_path / "widgets.mprof"
    mprof("run", "--quiet", "-o", output, program)
    completed = mprof("report", "--tables", "leaks", output)
    assert completed.stderr == ("mprof: warning: no symbols or debug information for widgets (its frames read "
                                "widgets+0x...); build with -g and do not strip, or set DEBUGINFOD_URLS to a "
                                "debuginfod server that has them\n")
    # Its 4,913 red widgets of 204 bytes, from the program's own frames:
    # main (named where it is exported), make_red_widget and make_widget.
    [(objects, size, path)] = rows(completed.stdout, "Memory leak table")
    assert (objects, size) == ("4,913", "1,002,252")
    frames = path.split("  ")[-1].split(" > ")  # after the kind
    assert [frame.split("+0x")[0] for frame in frames[-3:]] == ["main" if exported else "widgets"] + ["widgets"] * 2
