"""Programs with their own allocators (libmprof(3)): pools annotated with
mprof.h, and the same code annotated for Valgrind through mprof_valgrind.h,
against memcheck's own account of it.  Expected figures come from what the
programs do (their sources say it) and from memcheck."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e_support import BUILD, C_FLAGS, REPO_ROOT, TARGETS, Run, Targets, mprof

MONITOR_HEADERS = f"-I{REPO_ROOT / 'monitor'}"
NODE, EDGE = 48, 24  # arena.c's objects
ROUND = 100_000  # objects in each of arena.c's first two rounds, half of each size
LAST_ROUND_NODES, LAST_ROUND_EDGES = 501, 500  # its third round's 1,001, never freed
FORGOTTEN = 1000  # the one malloc'ed block it leaks
ARENA_BACKING = (8 << 20) + 16  # its one arena, and the arena's header


def report(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(mprof("report", "--format", "json", path).stdout)
    return document


def rows(document: dict[str, Any], table: str, figure: str) -> dict[str, int]:
    return {row["path"]: row[figure] for row in document[table]}


LOST = ("definitely lost", "indirectly lost")


def lost_rows(document: dict[str, Any]) -> dict[tuple[str, str], int]:
    """The bytes of the leak rows the text's table lists by default, the
    definitely and indirectly lost, by path and kind (JSON has every kind)."""
    return {(row["path"], row["kind"]): row["kept_bytes"] for row in document["leaks"] if row["kind"] in LOST}


@pytest.mark.slow
def test_an_arena_reset_twice(targets: Targets, profile: Callable[..., Run]) -> None:
    run = profile([targets.build("arena", MONITOR_HEADERS)])
    document = report(run.output)
    summary = document["summary"]
    round_bytes = ROUND // 2 * (NODE + EDGE)
    kept = LAST_ROUND_NODES * NODE + LAST_ROUND_EDGES * EDGE + FORGOTTEN
    assert (summary["allocs"], summary["bytes_allocated"]) == (2 * ROUND + 1001 + 1, 2 * round_bytes + kept)
    assert (summary["frees"], summary["bytes_freed"]) == (2 * ROUND, 2 * round_bytes)
    assert (summary["kept_objects"], summary["kept_bytes"]) == (1002, kept)
    assert (summary["pool_alloc_calls"], summary["pool_free_calls"], summary["pool_resets"]) == (2 * ROUND + 1001, 0, 2)
    # The arena is the pool's, not the program's: in no figure but its own.
    assert (summary["backing_blocks"], summary["backing_bytes"], summary["backing_frees"]) == (1, ARENA_BACKING, 0)
    # The peak: the first round's objects, the moment before the reset.
    assert (summary["max_live_bytes"], summary["max_live_objects"], summary["peak_allocs"]) == (
        round_bytes, ROUND, ROUND)
    node = "main > round_of > make_node > arena_alloc > [pool parser arena]"
    edge = "main > round_of > make_edge > arena_alloc > [pool parser arena]"
    assert {row["path"]: (row["blocks"], row["bytes"]) for row in document["peak"]["paths"]} == {
        node: (ROUND // 2, ROUND // 2 * NODE), edge: (ROUND // 2, ROUND // 2 * EDGE)}
    # Only what it really leaks: the last round's objects and its own block,
    # not the arena, not what the resets freed.
    assert {row["path"]: (row["allocs"] - row["frees"], row["kept_bytes"]) for row in document["leaks"]} == {
        node: (LAST_ROUND_NODES, LAST_ROUND_NODES * NODE), edge: (LAST_ROUND_EDGES, LAST_ROUND_EDGES * EDGE),
        "main": (1, FORGOTTEN)}
    bins = {row["size"]: (row["allocs"], row["frees"]) for row in document["bins"]}
    assert bins == {NODE: (ROUND + LAST_ROUND_NODES, ROUND), EDGE: (ROUND + LAST_ROUND_EDGES, ROUND),
                    FORGOTTEN: (1, 0)}
    # Each reset frees the object just made, an edge (rounds end on one),
    # before the thread allocates again.
    assert rows(document, "temporaries", "temporaries") == {edge: 2}
    text = mprof("report", "--tables", "summary", run.output).stdout
    assert f"  pool backing  1 block, {ARENA_BACKING:,} bytes, in no figure above; 0 blocks, 0 bytes freed" in text


@pytest.mark.parametrize(("settings", "leaks"), [
    ({"MPROF_DEPTH": "3"}, {("make_node", "arena_alloc", "[pool parser arena]"): LAST_ROUND_NODES,
                            ("make_edge", "arena_alloc", "[pool parser arena]"): LAST_ROUND_EDGES}),
    # Two frames: the edges' and the nodes' chains are one.
    ({"MPROF_CALL_GRAPH": "0", "MPROF_LEAK_DEPTH": "2"},
     {("arena_alloc", "[pool parser arena]"): LAST_ROUND_NODES + LAST_ROUND_EDGES})])
def test_the_pools_frame_is_one_of_the_depths(targets: Targets, profile: Callable[..., Run],
                                              settings: dict[str, str], leaks: dict[tuple[str, ...], int]) -> None:
    # mprof(5): no path deeper than the header's depth, the pool's frame
    # counted; the reader refuses a file with one.
    document = report(profile([targets.build("arena", MONITOR_HEADERS)], **settings).output)
    kept = {tuple(frame["function"] for frame in row["frames"]): row["allocs"] - row["frees"]
            for row in document["leaks"]}
    assert kept == {**leaks, ("main",): 1}


def test_the_api_costs_the_program_nothing_without_mprof(targets: Targets, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}
    completed = subprocess.run([targets.build("arena", MONITOR_HEADERS)], env=env, capture_output=True, cwd=tmp_path)
    assert (completed.returncode, completed.stdout, completed.stderr) == (0, b"", b"")
    assert list(tmp_path.iterdir()) == []


def test_an_executable_built_without_pie(targets: Targets, profile: Callable[..., Run]) -> None:
    # Its references to the weak functions are absolute: the dynamic
    # loader must still bind them to the preloaded monitor.
    summary = report(profile([targets.build("arena_no_pie", MONITOR_HEADERS, "-no-pie", source="arena.c")]).output)[
        "summary"]
    assert (summary["pool_alloc_calls"], summary["backing_blocks"], summary["max_live_bytes"]) == (
        2 * ROUND + 1001, 1, ROUND // 2 * (NODE + EDGE))


def memcheck_log(executable: Path) -> str:
    completed = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=all", str(executable)],
                               capture_output=True, text=True, timeout=300, check=True)
    return completed.stderr


def memcheck(executable: Path, log: str | None = None) -> tuple[tuple[int, int], set[tuple[str, str, int, int]]]:
    """memcheck's totals (allocations, bytes allocated) and its loss
    records: (innermost function of the program, its caller, blocks,
    bytes), the allocator's own frame skipped."""
    log = memcheck_log(executable) if log is None else log
    totals = re.search(r"total heap usage: ([\d,]+) allocs, [\d,]+ frees, ([\d,]+) bytes allocated", log)
    assert totals, log
    records = set()
    loss_record = r"([\d,]+) bytes in ([\d,]+) blocks are .*? in loss record.*?\n((?:==\d+==\s+(?:at|by) .*\n)+)"
    for record in re.finditer(loss_record, log):
        functions = [frame for frame in re.findall(r"(?:at|by) 0x[0-9A-F]+: (\S+)", record[3])
                     if frame not in ("malloc",)]
        records.add((functions[0], functions[1] if len(functions) > 1 else "",
                     int(record[2].replace(",", "")), int(record[1].replace(",", ""))))
    return (int(totals[1].replace(",", "")), int(totals[2].replace(",", ""))), records


def leak_records(document: dict[str, Any]) -> set[tuple[str, str, int, int]]:
    """mprof's leak table as memcheck's loss records: the pool's frame is
    the allocator's, like malloc's in memcheck's; the regions the program
    mapped itself, which memcheck does not count, left out."""
    records = set()
    for row in document["leaks"]:
        if row["frames"][-1]["function"] in ("[mmap]", "[brk]"):
            continue
        functions = [frame["function"] for frame in row["frames"] if not frame["function"].startswith("[")]
        records.add((functions[-1], functions[-2] if len(functions) > 1 else "", row["allocs"] - row["frees"],
                     row["kept_bytes"]))
    return records


@pytest.mark.slow
def test_a_pools_anchor_is_never_a_temporary(targets: Targets, profile: Callable[..., Run]) -> None:
    """arena.c built for memcheck: the arena is malloc'ed, the pool
    created at it, and its first object announced before the program
    allocates again, so the arena is the thread's last block when it
    becomes the pool's backing.  That is no free: the only temporaries
    are the edge each reset frees, the object just made."""
    executable = targets.build("arena_valgrind", MONITOR_HEADERS, "-DVALGRIND_ANNOTATIONS", source="arena.c")
    document = report(profile([executable]).output)
    summary = document["summary"]
    assert (summary["backing_blocks"], summary["backing_bytes"], summary["backing_frees"]) == (1, ARENA_BACKING, 0)
    edge = "main > round_of > make_edge > arena_alloc > [pool from arena_create]"
    assert rows(document, "temporaries", "temporaries") == {edge: 2}
    assert summary["temporary_allocs"] == 2
    bins = {row["size"]: row["temporaries"] for row in document["bins"]}
    assert bins == {NODE: 0, EDGE: 2, FORGOTTEN: 0}


@pytest.mark.valgrind
def test_the_arena_annotated_for_valgrind_agrees_with_memcheck(targets: Targets,
                                                                profile: Callable[..., Run]) -> None:
    executable = targets.build("arena_valgrind", MONITOR_HEADERS, "-DVALGRIND_ANNOTATIONS", source="arena.c")
    (allocs, allocated), records = memcheck(executable)
    document = report(profile([executable]).output)
    summary = document["summary"]
    # memcheck counts the arena among its allocations; mprof keeps it as
    # the pool's backing, found when the pool's first object fell in it.
    assert (summary["allocs"] + summary["backing_blocks"], summary["bytes_allocated"] + summary["backing_bytes"]) == (
        allocs, allocated)
    assert (summary["backing_blocks"], summary["backing_bytes"]) == (1, ARENA_BACKING)
    assert records == {("arena_alloc", "make_node", LAST_ROUND_NODES, LAST_ROUND_NODES * NODE),
                       ("arena_alloc", "make_edge", LAST_ROUND_EDGES, LAST_ROUND_EDGES * EDGE),
                       ("main", "", 1, FORGOTTEN)}
    assert leak_records(document) == records
    assert {row["path"] for row in document["leaks"]} >= {
        "main > round_of > make_node > arena_alloc > [pool from arena_create]"}


@pytest.mark.valgrind
def test_the_rest_of_valgrinds_requests_agree_with_memcheck(targets: Targets, profile: Callable[..., Run]) -> None:
    executable = targets.build("pools_misc", MONITOR_HEADERS)
    (allocs, allocated), records = memcheck(executable)
    document = report(profile([executable]).output)
    summary = document["summary"]
    # A resize in place and a MEMPOOL_CHANGE are a free and an allocation
    # to mprof, as realloc is, and neither to memcheck: one of 24 bytes and
    # one of 200 more.
    assert (summary["allocs"] + summary["backing_blocks"] - 2,
            summary["bytes_allocated"] + summary["backing_bytes"] - 24 - 200) == (allocs, allocated)
    # Two superblocks, freed: the metapools' pieces are backing.
    assert (summary["backing_blocks"], summary["backing_frees"], summary["backing_bytes"]) == (2, 2, 2 * 65536)
    assert records == {("leak_blocks", "main", 20, 20 * 16), ("fill_pool", "main", 10, 10 * 100)}
    assert leak_records(document) == records
    # Its three regions from mmap, never unmapped: two superblocks and the
    # pool's 64 slots.
    assert rows(document, "leaks", "kept_bytes") == {"main > leak_blocks > [malloc-like blocks]": 20 * 16,
                                                     "main > fill_pool > [pool from main]": 10 * 100,
                                                     "main > map > [mmap]": 2 * 65536 + 64 * 128}


@pytest.mark.slow
@pytest.mark.valgrind
@pytest.mark.parametrize("blocks", ["headers", "map"])
def test_a_malloced_block_resized_in_place_agrees_with_memcheck(targets: Targets, profile: Callable[..., Run],
                                                                 blocks: str) -> None:
    # resize_in_place.c: three blocks of the malloc family, each resized in
    # place once (to 50, 40 and 200 bytes); two resizes of no block.
    executable = targets.build("resize_in_place", MONITOR_HEADERS)
    log = memcheck_log(executable)
    (allocs, allocated), records = memcheck(executable, log)
    assert ((allocs, allocated), records) == ((3, 420), {("keep_shrunk", "main", 1, 40)})
    document = report(profile([executable], MPROF_BLOCKS=blocks).output)
    # The block kept is lost with its new size, the others freed with theirs.
    assert leak_records(document) == records
    assert rows(document, "leaks", "kept_bytes") == {"main > keep_shrunk": 40}
    summary = document["summary"]
    # Each resize is a free and an allocation to mprof, as a realloc that
    # kept its place is, and neither to memcheck.
    assert (summary["pool_alloc_calls"], summary["pool_free_calls"]) == (3, 5)
    assert (summary["allocs"] - 3, summary["bytes_allocated"] - 50 - 40 - 200) == (allocs, allocated)
    assert (summary["frees"], summary["bytes_freed"]) == (2 + 3, 100 + 64 + 256 + 50 + 200)
    # What memcheck refuses as an invalid free is an unknown one, and the
    # page from mmap stays whole until its munmap.
    assert summary["unknown_frees"] == log.count("== Invalid free() / delete / delete[] / realloc()") == 2
    assert (summary["mapped_bytes"], summary["unmapped_bytes"], summary["mapped_splits"]) == (4096, 4096, 0)


@pytest.mark.slow
def test_threads_share_a_pool(targets: Targets, profile: Callable[..., Run]) -> None:
    document = report(profile([targets.build("pool_threads", MONITOR_HEADERS)]).output)
    summary = document["summary"]
    objects = 4 * 25_000
    assert (summary["pool_alloc_calls"], summary["pool_free_calls"], summary["pool_resets"]) == (objects + 3,
                                                                                                  objects // 2, 1)
    assert (summary["backing_blocks"], summary["backing_bytes"]) == (1, objects * 32 + 3 * 32)
    # The 3 objects main takes and drops: nothing points to them (the pool's
    # base is the backing's start), definitely lost, as memcheck says of the
    # same program annotated with VALGRIND_MEMPOOL_* ("96 bytes in 3 blocks
    # are definitely lost").  memcheck also says possibly lost of the
    # threads' DTVs, glibc's, in no row of the lost.
    assert lost_rows(document) == {("main > pool_take > [pool shared pool]", "definitely lost"): 3 * 32}
    [row] = [row for row in document["leaks"] if row["kind"] in LOST]
    assert (row["allocs"], row["frees"]) == (3, 0)
    # The pool stands for the allocator in the table of direct allocators.
    direct = {row["function"]: (row["module"], row["calls"]) for row in document["direct"]}
    assert direct["[pool shared pool]"] == ("[pools]", objects + 3)


@pytest.fixture(scope="module")
def pool_library(targets: Targets) -> Path:
    return targets.build("libpool_library.so", MONITOR_HEADERS, source="pool_library.c", shared=True)


def pool_user_figures(run: Run) -> tuple[dict[tuple[str, str], int], int]:
    """The lost rows' bytes and the pool's allocations.  The 7 objects, in a
    static buffer, have no pointer to them anywhere: memcheck says "70 bytes
    in 7 blocks are definitely lost" of the same code announced through
    mprof_valgrind.h (VALGRIND_CREATE_MEMPOOL, VALGRIND_MEMPOOL_ALLOC)."""
    document = report(run.output)
    return lost_rows(document), document["summary"]["pool_alloc_calls"]


def test_a_shared_library_announces_its_pool(targets: Targets, pool_library: Path,
                                             profile: Callable[..., Run]) -> None:
    executable = targets.build("pool_user", str(pool_library), f"-Wl,-rpath,{pool_library.parent}")
    assert pool_user_figures(profile([executable])) == (
        {("main > library_object > [pool library pool]", "definitely lost"): 70}, 7)


def test_a_program_linked_with_the_static_monitor(targets: Targets, tmp_path: Path) -> None:
    executable = tmp_path / "pool_user_static"
    subprocess.run(["gcc", *C_FLAGS, MONITOR_HEADERS, "-o", str(executable), str(TARGETS / "pool_user.c"),
                    str(TARGETS / "pool_library.c"), "-Wl,--whole-archive", str(BUILD / "libmprof.a"),
                    "-Wl,--no-whole-archive", "-lunwind", "-lzstd", "-lz", "-ldl", "-lpthread"], check=True)
    output = tmp_path / "static.mprof"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}
    subprocess.run([executable], env=dict(env, MPROF_OUTPUT=str(output)), check=True, timeout=60)
    assert pool_user_figures(Run(subprocess.CompletedProcess([], 0), output)) == (
        {("main > library_object > [pool library pool]", "definitely lost"): 70}, 7)


@pytest.mark.slow
def test_a_pool_and_a_mapping_across_fork(targets: Targets, tmp_path: Path) -> None:
    # pool_fork.c: the parent's file has its 10 objects (3 freed) and its
    # region; the child's its own 5, freed by the reset with the parent's
    # 10, which are inherited frees, and the region's unmapping.
    output = tmp_path / "fork.mprof"
    mprof("run", "--quiet", "-o", output, targets.build("pool_fork", MONITOR_HEADERS))
    [child_file] = [path for path in tmp_path.iterdir() if path.name.startswith("fork.mprof.")]
    figures = ("allocs", "frees", "inherited_frees", "pool_alloc_calls", "pool_resets", "mmap_calls", "munmap_calls",
               "unmapped_bytes")
    parent, child = report(output), report(child_file)
    assert [parent["summary"][name] for name in figures] == [10, 3, 0, 10, 0, 1, 0, 0]
    assert rows(parent, "leaks", "kept_bytes") == {"main > take > [pool forked pool]": 7 * 32,
                                                   "main > [mmap]": 4 * 4096}
    # The region was the parent's: its unmapping is a call of the child's, its
    # bytes no figure of the child's (left would be -16,384), as an inherited free.
    assert [child["summary"][name] for name in figures] == [5, 5, 10, 5, 1, 0, 1, 0]
    assert child["leaks"] == []


def test_the_headers_in_cxx(targets: Targets, profile: Callable[..., Run]) -> None:
    executable = targets.build("pool_cxx", MONITOR_HEADERS, "-std=c++17", "-pedantic", "-Wall", "-Wextra", "-Werror")
    document = report(profile([executable]).output)
    summary = document["summary"]
    assert (summary["allocs"], summary["bytes_allocated"], summary["frees"], summary["pool_resets"]) == (2, 96, 1, 1)
    assert (summary["backing_blocks"], summary["backing_bytes"], summary["backing_frees"]) == (1, 4096, 1)
    assert rows(document, "leaks", "kept_bytes") == {"main > [malloc-like blocks]": 32}


@pytest.mark.slow
def test_a_pools_name_is_escaped_once(targets: Targets, profile: Callable[..., Run], tmp_path: Path) -> None:
    # The pool's one object, listed whatever its kind: the name is the test's.
    run = profile([targets.build("pool_names", MONITOR_HEADERS)])
    text = mprof("report", "--tables", "leaks", "--leak-kinds", "all", run.output).stdout
    assert 'main > [pool <b>a&b</b>"x"\\x0a]' in text.splitlines()[-1]
    page = tmp_path / "names.html"
    mprof("html", "--leak-kinds", "all", run.output, "-o", page)
    html = page.read_text()
    assert "[pool &lt;b&gt;a&amp;b&lt;/b&gt;&#34;x&#34;\\x0a]" in html
    assert "<b>a&b" not in html


POOL_NAMES = 70_000  # pool_many_names.c's pools, more than the 65,536 frames the monitor once had


@pytest.mark.slow
def test_every_one_of_many_pool_names_keeps_its_own_frame(targets: Targets, profile: Callable[..., Run]) -> None:
    # pool_many_names.c: pool I, named pI in six digits, gets I % 3 + 1
    # objects of (I % 5 + 1) * 8 bytes; those of even I are freed with
    # their pool, those of odd I kept; the pools of even I below 20 are
    # made again under their names and do it twice.
    run = profile([targets.build("pool_many_names", MONITOR_HEADERS), str(POOL_NAMES)])
    expected = {}
    for i in range(POOL_NAMES):
        calls = (i % 3 + 1) * (2 if i < 20 and i % 2 == 0 else 1)
        allocated = calls * (i % 5 + 1) * 8
        expected[f"p{i:06d}"] = (allocated, allocated if i % 2 else 0, calls)
    # A frame for each name, those made again sharing theirs.
    assert [pool.name for pool in run.data().pools] == [f"p{i:06d}" for i in range(POOL_NAMES)]
    text = mprof("report", "--no-pager", "--tables", "direct", "--all", run.output).stdout
    row = re.compile(r" {10,}([\d,]+) {20,}([\d,]+) {20,}([\d,]+)  \[pool (p\d{6})\]  \(via fill 100%\)")
    found = {}
    for line in text.splitlines():
        if match := row.fullmatch(line):
            found[match[4]] = tuple(int(figure.replace(",", "")) for figure in match.group(1, 2, 3))
    assert found == expected
    # Every object announced is counted, and each pool destroyed.
    summary = run.data().summary
    assert (summary.pool_alloc_calls, summary.pool_resets) == (sum(calls for *_, calls in expected.values()),
                                                                POOL_NAMES // 2 + 10)
