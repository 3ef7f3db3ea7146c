"""Whole call paths, from a real program (tests/targets/shared_callee.c):
w has two callers that allocate very different amounts through it, so only
whole paths can tell each caller's bytes; the pairs alone would share w's
bytes out between a and b in proportion to w's calls of x and y."""

from __future__ import annotations

import subprocess
from pathlib import Path

from e2e_support import Targets, monitor_env, path_name
from mprof.cli.inputs import load_profile
from mprof.report import flame
from mprof.report.display import for_display


def frames_by_path(graph: flame.Flame) -> dict[str, int]:
    """'main > a > w' -> bytes, for every frame."""
    names: list[str] = []
    found = {}
    for frame in graph.frames:
        names[frame.depth:] = [frame.name]
        found[" > ".join(names[1:])] = frame.bytes
    return found


def test_each_caller_keeps_its_own_bytes_below_a_shared_function(targets: Targets, tmp_path: Path) -> None:
    output = tmp_path / "shared.mprof"
    subprocess.run([targets.build("shared_callee")], env=monitor_env(output), check=True, timeout=60)
    model = for_display(load_profile([output]))
    graph = flame.allocation_flame(model)
    assert graph is not None
    found = frames_by_path(graph)
    # 1,000 blocks of 100 bytes through a > w > x, 10 of 5,000 through b > w > y.
    assert {path: found[path] for path in found if path.startswith("main")} == {
        "main": 150_000, "main > a": 100_000, "main > a > w": 100_000, "main > a > w > x": 100_000,
        "main > b": 50_000, "main > b > w": 50_000, "main > b > w > y": 50_000}
    # The database holds each whole path with its figures.
    by_path = {path_name(model, path): (path.allocs, path.frees, sum(path.bytes), sum(path.freed))
               for path in model.paths}
    assert by_path["main > a > w > x"] == (1000, 1000, 100_000, 100_000)
    assert by_path["main > b > w > y"] == (10, 10, 50_000, 50_000)
