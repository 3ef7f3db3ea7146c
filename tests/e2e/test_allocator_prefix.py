"""A second allocator with je_-prefixed entry points (mprof run
--allocator-prefix): a small one built here, as a shared library and linked
into the executable.  prefixed_user.c says what it allocates."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from e2e_support import MPROF, TARGETS, Targets, mprof

ITEM, GROWN, TABLE = 100, 200, 10 * 30
ITEMS, DROPPED, GROWN_ITEMS, TABLES = 1000, 400, 10, 5
OWN_MALLOC = 50  # its one block from glibc's malloc
# The allocator's region, mapped at its first block: the program's own
# mapping when its calls are not the monitor's; its blocks' memory when
# they are, as glibc's mappings are.
UNSEEN = {"main": (1, OWN_MALLOC), "main > make_item > je_malloc > [mmap]": (1, 64 << 20)}


@pytest.fixture(scope="module")
def shared_allocator(targets: Targets) -> Path:
    library = targets.build("libprefixed.so", source="prefixed_allocator.c", shared=True)
    return targets.build("prefixed_user", str(library), f"-Wl,-rpath,{library.parent}")


def run(tmp_path: Path, *arguments: str | Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    output = tmp_path / "prefixed.mprof"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}
    completed = subprocess.run([MPROF, "run", "--quiet", "-o", output, *arguments], env=env, capture_output=True,
                               text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    document = json.loads(mprof("report", "--format", "json", output).stdout)
    return completed, document


def kept(document: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {row["path"]: (row["allocs"] - row["frees"], row["kept_bytes"]) for row in document["leaks"]}


def test_a_shared_allocators_blocks_are_counted(shared_allocator: Path, tmp_path: Path) -> None:
    completed, document = run(tmp_path, "--allocator-prefix", "je_", shared_allocator)
    assert completed.stderr == ""
    summary = document["summary"]
    assert (summary["allocs"], summary["frees"]) == (ITEMS + GROWN_ITEMS + TABLES + 1, DROPPED + GROWN_ITEMS)
    assert (summary["malloc_calls"], summary["calloc_calls"], summary["realloc_calls"], summary["free_calls"]) == (
        ITEMS + 1, TABLES, GROWN_ITEMS, DROPPED)
    assert summary["bytes_allocated"] == ITEMS * ITEM + GROWN_ITEMS * GROWN + TABLES * TABLE + OWN_MALLOC
    assert kept(document) == {
        "main > make_item": (ITEMS - DROPPED - GROWN_ITEMS, (ITEMS - DROPPED - GROWN_ITEMS) * ITEM),
        "main > grow_item": (GROWN_ITEMS, GROWN_ITEMS * GROWN), "main > make_table": (TABLES, TABLES * TABLE),
        "main": (1, OWN_MALLOC)}
    # The leak scan finds the second allocator's blocks too: every one is
    # held from the program's static arrays, still reachable.
    assert {row["kind"] for row in document["leaks"]} == {"still reachable"}
    # The peak: every item made, none dropped yet (and no malloc'ed block).
    assert (summary["max_live_bytes"], summary["max_live_objects"]) == (ITEMS * ITEM, ITEMS)


def test_without_the_prefix_only_malloc_is_seen(shared_allocator: Path, tmp_path: Path) -> None:
    completed, document = run(tmp_path, shared_allocator)
    assert completed.stderr == ""
    assert kept(document) == UNSEEN


@pytest.mark.slow
def test_an_allocator_linked_into_the_executable_is_named(targets: Targets, tmp_path: Path) -> None:
    executable = targets.build("prefixed_static", str(TARGETS / "prefixed_allocator.c"), source="prefixed_user.c")
    completed, document = run(tmp_path, "--allocator-prefix", "je_", executable)
    assert completed.stderr == (f"mprof: warning: pid {document['runs'][0]['pid']} ({executable}): je_malloc is "
                                "linked into the executable itself, whose calls mprof cannot route: the profile "
                                "holds none of its blocks\n")
    assert kept(document) == UNSEEN
    report = mprof("report", "--tables", "summary", tmp_path / "prefixed.mprof")
    assert report.stderr == (f"mprof: warning: {tmp_path / 'prefixed.mprof'}: je_malloc is linked into the "
                             "executable itself, whose calls mprof cannot route: the profile holds none of its "
                             "blocks\n")


def test_a_prefix_no_library_has(shared_allocator: Path, tmp_path: Path) -> None:
    completed, document = run(tmp_path, "--allocator-prefix", "tc_", shared_allocator)
    assert completed.stderr.endswith("): no library of the process defines tc_malloc and tc_free: the profile "
                                     "holds none of their blocks\n")
    assert kept(document) == UNSEEN


@pytest.mark.parametrize("prefix", ["je-", "", "x" * 32])
def test_a_prefix_the_monitor_would_not_take_is_refused(shared_allocator: Path, prefix: str) -> None:
    completed = mprof("run", "--allocator-prefix", prefix, shared_allocator, check=False)
    assert (completed.returncode, completed.stderr) == (
        2, f"mprof: --allocator-prefix {prefix}: the monitor takes letters, digits and _, at most 31; the program "
           "was not started\n")
