"""The paper's producer/consumer example: every figure is known exactly."""

from __future__ import annotations

import json
import subprocess
import zlib
from pathlib import Path

import pytest

from e2e_support import BUILD, MPROF, in_module, module_named

WIDGETS = BUILD / "widgets"
WIDGET_SIZE = 204
MASK = (1 << 64) - 1


def red_widgets(count: int) -> int:
    """widgets.c's random_flip, replayed: the red ones are those it gave 0."""
    state, red = 0x2545F4914F6CDD1D, 0
    for _ in range(count):
        state ^= state >> 12
        state ^= (state << 25) & MASK
        state ^= state >> 27
        red += ((state * 0x2545F4914F6CDD1D) & MASK) >> 63 == 0
    return red


def run_widgets(tmp_path: Path, *options: str, count: int = 10000) -> Path:
    output = tmp_path / "widgets.mprof"
    completed = subprocess.run([MPROF, "run", "--quiet", "-o", output, *options, "--", WIDGETS, str(count)],
                               capture_output=True, text=True, check=True)
    red = red_widgets(count)
    assert completed.stdout == f"widgets {count} red {red} blue {count - red}\n"
    return output


def test_totals_are_exact(tmp_path: Path) -> None:
    from mprof.reducer import datafile

    data = datafile.read(run_widgets(tmp_path))
    red = red_widgets(10000)
    assert red == 4913
    s = data.summary
    assert (s.allocs, s.bytes_allocated, s.malloc_calls) == (10000, 2040000, 10000)
    assert (s.frees, s.bytes_freed) == (10000 - red, (10000 - red) * WIDGET_SIZE)
    assert s.bytes_allocated - s.bytes_freed == WIDGET_SIZE * red
    assert (s.max_live_objects, s.max_live_bytes) == (10000, 2040000)
    assert (s.unknown_frees, s.failed_allocs, s.truncated_chains) == (0, 0, 0)
    assert data.header.call_graph and data.header.final and not data.header.forked
    assert data.header.leak_depth == 5
    assert [(b.size, b.allocs, b.frees, b.bytes, b.bytes_freed) for b in data.bins] == [
        (204, 10000, 10000 - red, 2040000, (10000 - red) * 204)]


def test_direct_site_leak_chains_and_pairs(tmp_path: Path) -> None:
    from mprof.reducer import datafile, tree

    data = datafile.read(run_widgets(tmp_path))
    totals = tree.totals(data)
    red = red_widgets(10000)
    executable = module_named(data, WIDGETS)
    # make_widget is the only function that calls malloc.
    [site] = totals.sites
    assert in_module(site.addr, executable)
    assert (site.calls, site.frees, site.bytes, site.freed) == (
        10000, 10000 - red, (0, 2040000, 0, 0), (0, (10000 - red) * 204, 0, 0))
    # Two partial paths: through make_red_widget (all kept) and
    # make_blue_widget (all freed), both ending in make_widget's call.
    chains = sorted(totals.leaks, key=lambda c: c.allocs)
    assert [(c.allocs, c.frees, c.bytes, c.bytes_freed) for c in chains] == [
        (red, 0, red * 204, 0), (10000 - red, 10000 - red, (10000 - red) * 204, (10000 - red) * 204)]
    assert all(c.addrs[0] == site.addr and len(c.addrs) == 5 for c in chains)
    # Two call sites in main, one caller of main.
    assert chains[0].addrs[2] != chains[1].addrs[2] and chains[0].addrs[3] == chains[1].addrs[3]
    # The pairs into make_widget's call site carry the two producers' shares.
    into_site = sorted((p.calls, p.bytes) for p in totals.pairs if p.callee == site.addr)
    assert into_site == [(red, (0, red * 204, 0, 0)), (10000 - red, (0, (10000 - red) * 204, 0, 0))]
    # Every allocation passes main once: the pairs out of main's two call
    # sites add up to all of them.
    main_sites = {c.addrs[2] for c in chains}
    out_of_main = [p for p in totals.pairs if p.caller in main_sites]
    assert sum(p.calls for p in out_of_main) == 10000
    assert sum(sum(p.bytes) for p in out_of_main) == 2040000


def test_minus_mode_skips_the_call_graph(tmp_path: Path) -> None:
    from mprof.reducer import datafile, tree

    data = datafile.read(run_widgets(tmp_path, "--no-call-graph"))
    totals = tree.totals(data)
    assert not data.header.call_graph
    assert len(totals.pairs) == 0
    assert (data.summary.allocs, data.summary.bytes_allocated) == (10000, 2040000)
    assert len(totals.leaks) == 2 and len(totals.sites) == 1


def test_json_report(tmp_path: Path) -> None:
    output = run_widgets(tmp_path)
    completed = subprocess.run([MPROF, "report", "--format", "json", output], capture_output=True,
                               text=True, check=True)
    summary = json.loads(completed.stdout)["summary"]
    red = red_widgets(10000)
    expected = {"allocs": 10000, "frees": 10000 - red, "bytes_allocated": 2040000,
                "bytes_freed": (10000 - red) * 204, "kept_objects": red, "kept_bytes": red * 204,
                "max_live_objects": 10000, "max_live_bytes": 2040000}
    assert {key: summary[key] for key in expected} == expected


@pytest.mark.slow
@pytest.mark.parametrize("options", [(), ("--no-call-graph",)])
def test_file_size_does_not_grow_with_allocations(tmp_path: Path, options: tuple[str, ...]) -> None:
    from mprof.reducer import datafile

    def sizes(path: Path) -> tuple[int, int]:
        """The file's bytes but the memory over time's, and that section's:
        a longer run has more points, up to a bound."""
        points = len(datafile.read(path).timeline)
        return inflated_size(path) - timeline_bytes(path), points

    small, small_points = sizes(run_widgets(tmp_path, *options, count=20000))
    large, large_points = sizes(run_widgets(tmp_path, *options, count=1000000))
    assert small < 4096
    assert abs(large - small) <= small // 10, (small, large)
    assert small_points <= large_points <= 2000


def inflated_size(path: Path) -> int:
    """The file's size as it would be uncompressed: the header and its
    sections inflated (mprof(5))."""
    data = path.read_bytes()
    return 64 + len(zlib.decompress(data[64:])) if data[12] & 0x10 else len(data)


def timeline_bytes(path: Path) -> int:
    """The size of the TIME section, header included (mprof(5))."""
    data = path.read_bytes()
    if data[12] & 0x10:
        data = data[:64] + zlib.decompress(data[64:])
    at = 64
    while at < len(data):
        tag, size = data[at:at + 4], int.from_bytes(data[at + 8:at + 16], "little")
        if tag == b"TIME":
            return 16 + size
        at += 16 + size
    raise AssertionError("no TIME section")


def test_depth_option_and_data_file_mode(tmp_path: Path) -> None:
    from mprof.reducer import datafile, tree

    output = run_widgets(tmp_path, "--depth", "3", "--leak-depth", "2")
    assert output.stat().st_mode & 0o777 == 0o600
    data = datafile.read(output)
    totals = tree.totals(data)
    assert (data.header.stack_depth, data.header.leak_depth) == (3, 2)
    # main -> make_*_widget -> make_widget is three frames: the chain is cut below main's callers.
    assert data.summary.truncated_chains == 10000
    assert all(len(c.addrs) == 2 for c in totals.leaks)
    # Three frames make two pairs per chain: main into each producer, each
    # producer into make_widget, as many calls as that producer made widgets.
    assert sorted((p.calls, sum(p.bytes)) for p in totals.pairs) == [
        (4913, 4913 * 204), (4913, 4913 * 204), (5087, 5087 * 204), (5087, 5087 * 204)]
