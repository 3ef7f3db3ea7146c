"""mprof export, opened by the tools it is for: Go's pprof reads the pprof
profile, inferno draws the collapsed stacks.  The expected figures are
exported.c's, which allocates known blocks from known functions; pprof's
top is also checked against mprof's own direct allocation table.  The
blocks exported.c never frees stay in global arrays: still reachable, as
memcheck says (64,400 bytes in 350 blocks), none lost; the leak measures
count them with every kind (--leak-kinds all), and by default none."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from e2e_support import BUILD, MPROF, Targets, mprof

INFERNO = BUILD / "tools" / "bin" / "inferno-flamegraph"

# exported.c's blocks by the function that allocated them, per measure;
# the leak measures with every kind (EVERY_KIND).
EVERY_KIND = ("--leak-kinds", "all")
EXPECTED_FLAT = {
    "alloc_objects": {"cache_slot": 100, "make_name": 300, "parse": 20},
    "alloc_space": {"cache_slot": 100_000, "make_name": 14_400, "parse": 81_920},
    "leak_objects": {"cache_slot": 50, "make_name": 300},
    "leak_space": {"cache_slot": 50_000, "make_name": 14_400},
    "peak_objects": {"cache_slot": 100, "make_name": 300},
    "peak_space": {"cache_slot": 100_000, "make_name": 14_400},
    "temp_objects": {"parse": 20},
}
# Whole paths, outermost first.
PATHS = {"cache_slot": "main;load_cache;cache_slot", "make_name": "main;name_all;make_name", "parse": "main;parse"}

_TOP_ROW = re.compile(r"^\s*(\d+)B?\s+[\d.]+%\s+[\d.]+%\s+(\d+)B?\s+[\d.]+%\s+(.+?)\s*$")


@pytest.fixture(scope="module")
def profiled(exported_run: Path) -> Path:
    return exported_run


@pytest.fixture(scope="module")
def exported(profiled: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("exported") / "exported.pb.gz"
    mprof("export", "--format", "pprof", *EVERY_KIND, "-o", output, profiled)
    return output


def go_pprof(*arguments: str | Path) -> str:
    go = shutil.which("go")
    assert go, "go is missing: make check's set-up installs golang-go (scripts/setup-tools.sh)"
    # Go's own build cache in the tree's build directory, not the user's.
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="", GOCACHE=str(BUILD / "tools" / "go-cache"))
    completed = subprocess.run([go, "tool", "pprof", *map(str, arguments)], capture_output=True, text=True,
                               timeout=300, env=env)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def top(profile: Path, sample: str) -> dict[str, tuple[int, int]]:
    """pprof -top: each function's flat and cumulative value."""
    unit = ["-unit=B"] if sample.endswith("_space") else []
    rows = {}
    for line in go_pprof("-top", *unit, f"-sample_index={sample}", profile).splitlines():
        match = _TOP_ROW.match(line)
        if match:
            rows[match.group(3).removesuffix(" (inline)")] = (int(match.group(1)), int(match.group(2)))
    return rows


@pytest.mark.go
@pytest.mark.parametrize("sample", sorted(EXPECTED_FLAT))
def test_pprof_top_has_each_functions_own_figures(exported: Path, sample: str) -> None:
    rows = top(exported, sample)
    flat = {name: value for name, (value, _) in rows.items() if value}
    assert flat == EXPECTED_FLAT[sample]
    # Every frame of a path is there with its cumulative value: main with all.
    assert rows["main"] == (0, sum(EXPECTED_FLAT[sample].values()))
    if "cache_slot" in flat:
        assert rows["load_cache"] == (0, flat["cache_slot"])


@pytest.mark.go
def test_pprof_top_matches_the_direct_allocation_table(profiled: Path, exported: Path) -> None:
    # The direct table's kept blocks are all never freed: the leak measures' with every kind.
    direct = json.loads(mprof("report", "--format", "json", profiled).stdout)["direct"]
    for sample, column in (("alloc_space", "bytes"), ("alloc_objects", "calls"), ("leak_space", "kept_bytes"),
                           ("leak_objects", "kept_objects")):
        flat = {name: value for name, (value, _) in top(exported, sample).items() if value}
        assert flat == {row["function"]: row[column] for row in direct if row[column]}, sample


@pytest.mark.go
def test_an_inlined_function_shares_its_callers_location(exported: Path) -> None:
    # pprof marks a function inlined into the next frame of the same
    # location; cache_slot is always_inline in load_cache.
    traces = go_pprof("-traces", "-sample_index=alloc_objects", exported)
    # Each trace: a separator line, its value and leaf frame, then a frame a line.
    blocks = re.split(r"^-+\+-+\n", traces, flags=re.MULTILINE)[1:]
    stacks = [[re.sub(r"^\s*\d+\s+", "", line).strip() for line in block.splitlines()] for block in blocks]
    assert ["cache_slot (inline)", "load_cache", "main"] in stacks
    assert ["make_name", "name_all", "main"] in stacks
    # Older pprofs print file:line, newer ones file:line:column.
    raw = go_pprof("-raw", exported)
    locations = raw.split("Locations\n", 1)[1].split("Mappings\n", 1)[0]
    assert re.search(r"^\s+\d+: 0x0 M=\d+ cache_slot \S+exported\.c:\d+(:0)? s=\d+\n\s+load_cache ", locations,
                     re.MULTILINE), locations


@pytest.mark.go
@pytest.mark.server
def test_pprofs_web_ui_serves_the_profile(exported: Path) -> None:
    go = shutil.which("go")
    assert go
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="", GOCACHE=str(BUILD / "tools" / "go-cache"))
    server = subprocess.Popen([go, "tool", "pprof", "-no_browser", f"-http=127.0.0.1:{port}", str(exported)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        page = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not page:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ui/top?si=leak_space", timeout=5) as reply:
                    page = reply.read().decode()
            except OSError:
                time.sleep(0.2)
    finally:
        server.terminate()
        server.wait(30)
    # The top view's rows, as the page's script gets them.
    match = re.search(r"makeTopTable\(\s*(\d+)\s*,\s*(\[.*?\])\);", page)
    assert match, page[:2000]
    rows = {row["Name"]: (row["Flat"], row["Cum"]) for row in json.loads(match.group(2))}
    assert int(match.group(1)) == 64_400
    assert rows["cache_slot"] == (50_000, 50_000) and rows["make_name"] == (14_400, 14_400)
    assert rows["main"] == (0, 64_400)


@pytest.mark.go
def test_the_default_sample_type_is_chosen(profiled: Path, exported: Path, tmp_path: Path) -> None:
    output = tmp_path / "leaks.pb.gz"
    mprof("export", "--format", "pprof", "--sample", "leak_space", "-o", output, profiled)
    listing = go_pprof("-top", output)
    assert "Type: leak_space" in listing
    assert "Type: alloc_space" in go_pprof("-top", exported)


@pytest.mark.parametrize("sample", sorted(EXPECTED_FLAT))
def test_collapsed_stacks_have_each_paths_count(profiled: Path, sample: str) -> None:
    text = mprof("export", "--format", "collapsed", "--sample", sample, *EVERY_KIND, profiled).stdout
    expected = sorted(f"{PATHS[name]} {count}" for name, count in EXPECTED_FLAT[sample].items())
    assert text.splitlines() == expected


@pytest.mark.parametrize("sample", ["leak_objects", "leak_space"])
def test_the_leak_measures_count_the_lost_by_default(profiled: Path, sample: str, tmp_path: Path) -> None:
    # exported.c loses nothing (memcheck: all still reachable); the red
    # widgets of widgets 1000 are definitely lost (memcheck: 104,244 bytes in
    # 511 blocks), and the blue ones freed.
    assert mprof("export", "--format", "collapsed", "--sample", sample, profiled).stdout == ""
    reachable = mprof("export", "--format", "collapsed", "--sample", sample, "--leak-kinds", "reachable", profiled)
    assert reachable.stdout.splitlines() == sorted(
        f"{PATHS[name]} {count}" for name, count in EXPECTED_FLAT[sample].items())
    widgets = tmp_path / "widgets.mprof"
    mprof("run", "--quiet", "-o", widgets, BUILD / "widgets", "1000")
    lost = {"leak_objects": 511, "leak_space": 104_244}[sample]
    assert mprof("export", "--format", "collapsed", "--sample", sample, widgets).stdout == (
        f"main;make_red_widget;make_widget {lost}\n")


@pytest.mark.rust
def test_inferno_draws_the_collapsed_stacks(profiled: Path, tmp_path: Path) -> None:
    assert INFERNO.is_file(), "inferno is missing: make check's set-up builds it (scripts/setup-tools.sh)"
    stacks = tmp_path / "leaks.folded"
    mprof("export", "--format", "collapsed", "--sample", "leak_space", *EVERY_KIND, "-o", stacks, profiled)
    svg = subprocess.run([INFERNO, "--countname", "bytes", stacks], capture_output=True, text=True, check=True,
                         timeout=120).stdout
    titles = dict(re.findall(r"<title>(\S+) \(([\d,]+) bytes", svg))
    assert {name: int(count.replace(",", "")) for name, count in titles.items()} == {
        "all": 64_400, "main": 64_400, "load_cache": 50_000, "cache_slot": 50_000, "name_all": 14_400,
        "make_name": 14_400}


def test_a_profile_without_call_graph_gets_partial_paths_and_says_so(targets: Targets, tmp_path: Path) -> None:
    output = tmp_path / "minus.mprof"
    mprof("run", "--quiet", "--no-call-graph", "--leak-depth", "1", "-o", output, targets.build("exported"))
    completed = mprof("export", "--format", "collapsed", output)
    # One return address each: cache_slot's is load_cache's too (inlined).
    assert completed.stdout == "load_cache;cache_slot 100000\nmake_name 14400\nparse 81920\n"
    assert completed.stderr == (f"mprof: warning: {output}: taken in mprof- mode (--no-call-graph): its call paths "
                                "stop after 1 return address, the callers above unknown\n")


def test_a_pprof_profile_is_not_written_to_a_terminal(profiled: Path) -> None:
    controller, terminal = pty.openpty()
    try:
        completed = subprocess.run([MPROF, "export", "--format", "pprof", profiled], stdout=terminal,
                                   stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(terminal)
        os.close(controller)
    assert completed.returncode == 1
    assert completed.stderr == "mprof: a pprof profile is binary: name a file with -o, or redirect the output\n"


def test_a_corrupt_input_gets_one_line_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mprof"
    bad.write_bytes(b"MPROF\0\0\0garbage")
    output = tmp_path / "out.pb.gz"
    completed = mprof("export", "--format", "pprof", "-o", output, bad, check=False)
    assert completed.returncode != 0
    assert completed.stderr.startswith(f"mprof: {bad}: ") and completed.stderr.count("\n") == 1
    assert not output.exists()
