"""mprof's leak kinds (issue 49) against memcheck's on the same programs: per kind, bytes and blocks exact, and
on the same paths (the innermost of the program's own functions on each allocation's stack); and mprof run
--fail-on-leak's verdict against LeakSanitizer's on the same programs built with -fsanitize=address."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import address_space
import pytest

from e2e_support import REPO_ROOT, Targets, mprof
from leak_kinds_support import (
    KINDS,
    Verdict,
    leak_summary,
    own_functions,
    tls_modules_added,
    under_memcheck,
    under_mprof,
)

pytestmark = pytest.mark.valgrind

POOL_HEADERS = f"-I{REPO_ROOT / 'monitor'}"

# memcheck's figures for the program's own allocating functions, read off this machine's valgrind 3.19 and checked
# by hand against each source's account of itself: (kind, function) -> (blocks, bytes).  Blocks of other origins
# (glibc's per-thread DTVs under main, libstdc++'s emergency pool under none) are compared with mprof's all the
# same, but depend on the C and C++ libraries' versions.
EXPECTED: dict[str, dict[tuple[str, str], tuple[int, int]]] = {
    "leak_structures": {("definite", "list_node"): (1, 64), ("indirect", "list_node"): (9, 576),
                        ("definite", "tree_node"): (1, 32), ("indirect", "tree_node"): (14, 448),
                        ("definite", "drop_buffer"): (1, 1000), ("reachable", "cache_node"): (100, 6400)},
    "leak_threads": {("reachable", "on_stack"): (1, 200), ("reachable", "in_register"): (1, 300),
                     ("definite", "dropped_by_thread"): (1, 400)},
    "leak_interior": {("possible", "middle_block"): (1, 100), ("possible", "behind_middle"): (1, 48),
                      ("possible", "not_a_count"): (1, 64), ("reachable", "length64_block"): (1, 128),
                      ("reachable", "counted_array"): (1, 88), ("reachable", "start_block"): (1, 16)},
    "leak_cxx": {("reachable", "keep_string"): (1, 40), ("reachable", "keep_vector"): (2, 424),
                 ("reachable", "keep_array"): (1, 56), ("reachable", "keep_derived"): (1, 40),
                 ("definite", "lose_string"): (1, 32), ("indirect", "lose_string"): (1, 40),
                 ("definite", "lose_vector"): (1, 24), ("indirect", "lose_vector"): (1, 400),
                 ("definite", "lose_array"): (1, 56), ("definite", "lose_derived"): (1, 40)},
    # The copy-on-write std::string of the old ABI: one pointer to the characters, 24 bytes into its block.
    "leak_cxx_cow": {("reachable", "keep_string"): (1, 64), ("reachable", "keep_vector"): (2, 424),
                     ("reachable", "keep_array"): (1, 56), ("reachable", "keep_derived"): (1, 40),
                     ("definite", "lose_string"): (1, 8), ("indirect", "lose_string"): (1, 64),
                     ("definite", "lose_vector"): (1, 24), ("indirect", "lose_vector"): (1, 400),
                     ("definite", "lose_array"): (1, 56), ("definite", "lose_derived"): (1, 40)},
    "leak_stale_stack": {("definite", "lost_early"): (1, 24)},
    # The program's regions listed as one mapping with the monitor's memory, which holds the buffer's address, and
    # with large blocks' own mappings.
    "leak_merged_mappings": {("definite", "drop_buffer"): (1, 1000), ("definite", "lose_large"): (1, 1 << 20),
                             ("indirect", "held_by_large"): (1, 48), ("reachable", "keep_large"): (1, 1 << 20)},
    "leak_mapped": {("reachable", "held_by_mapping"): (1, 500), ("definite", "held_by_unmapped"): (1, 600)},
    # memcheck sees the pool through mprof_valgrind.h's mempool requests, mprof through mprof.h's calls.
    "leak_pool": {("reachable", "keep_objects"): (5, 320), ("reachable", "side_block"): (1, 100),
                  ("definite", "lose_chain"): (1, 64), ("indirect", "lose_chain"): (3, 192),
                  ("definite", "drop_object"): (1, 32), ("indirect", "lost_side_block"): (1, 200)},
}

# How each is built from tests/targets.
BUILDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "leak_structures": ("leak_structures.c", ()), "leak_threads": ("leak_threads.c", ()),
    "leak_interior": ("leak_interior.c", ()), "leak_cxx": ("leak_cxx.cc", ()),
    "leak_cxx_cow": ("leak_cxx.cc", ("-D_GLIBCXX_USE_CXX11_ABI=0",)), "leak_mapped": ("leak_mapped.c", ()),
    "leak_stale_stack": ("leak_stale_stack.c", ()), "leak_merged_mappings": ("leak_merged_mappings.c", ()),
    "leak_pool": ("leak_pool.c", (POOL_HEADERS,)),
}


def build(targets: Targets, name: str, *extra: str) -> Path:
    source, flags = BUILDS[name]
    return targets.build(name, *flags, *extra, source=source)


def own_part(verdict: Verdict, name: str) -> dict[tuple[str, str], tuple[int, int]]:
    functions = {function for _, function in EXPECTED[name]}
    return {(k, f): v for (k, f), v in verdict.by_function.items() if f is not None and f in functions}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_memcheck_says_what_the_program_does(targets: Targets, name: str) -> None:
    """The expected side on its own: memcheck's records for the program's functions are the source's account,
    so that a disagreement below is mprof's."""
    program = build(targets, name)
    verdict = under_memcheck([program], own_functions(program))
    assert own_part(verdict, name) == EXPECTED[name]


@pytest.mark.parametrize("name", list(EXPECTED))
def test_kinds_agree_with_memcheck(targets: Targets, name: str, tmp_path: Path) -> None:
    program = build(targets, name)
    own = own_functions(program)
    memcheck = under_memcheck([program], own)
    assert own_part(memcheck, name) == EXPECTED[name]
    if name == "leak_threads":
        _with_longer_dtvs(memcheck, tls_modules_added(program))
    ours = under_mprof([program], own, tmp_path)
    assert ours.totals == memcheck.totals
    assert ours.by_function == memcheck.by_function
    assert set(ours.totals) == set(KINDS)
    # The report's LEAK SUMMARY is memcheck's too: the regions the program
    # mapped itself, which memcheck does not count, are in none of its lines.
    report = mprof("report", "--no-pager", "--tables", "summary", tmp_path / "run.mprof").stdout
    assert leak_summary(report) == memcheck.totals


def _with_longer_dtvs(memcheck: Verdict, modules: int) -> None:
    """What the monitor's preload adds, the one thing: its modules' thread-local storage lengthens each thread's
    DTV (tls_modules_added), the two pthread_create calls' possibly lost blocks under main.  Their kind is the
    same: glibc keeps a pointer to each one's second slot."""
    assert modules == 2  # libmprof.so and libunwind.so.8, on Debian 12
    blocks, size = memcheck.by_function[("possible", "main")]
    assert blocks == 2
    memcheck.by_function[("possible", "main")] = (blocks, size + blocks * 16 * modules)
    total_blocks, total = memcheck.totals["possible"]
    memcheck.totals["possible"] = (total_blocks, total + blocks * 16 * modules)


# LeakSanitizer cannot see the pool's objects (it knows no mempool requests): leak_pool is left out; nor is
# leak_stale_stack, whose verdict depends on how deep each tool's own frames at exit reach into dead ones.
SANITIZED = ["leak_structures", "leak_threads", "leak_interior", "leak_cxx", "leak_cxx_cow", "leak_mapped",
             "leak_merged_mappings"]


def under_leaksanitizer(program: Path) -> bool:
    """Whether LeakSanitizer, in the program's AddressSanitizer build, finds a leak.  Where the address space is
    held below what AddressSanitizer reserves, it cannot start, and the test is skipped there."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "LSAN_OPTIONS")}
    env.update(ASAN_OPTIONS="detect_leaks=1", LSAN_OPTIONS="exitcode=23")
    completed = subprocess.run([program], env=env, capture_output=True, text=True, timeout=120)
    if "ReserveShadowMemoryRange failed" in completed.stderr:
        address_space.skip_if_too_small(address_space.ADDRESSSANITIZER_RESERVES, "AddressSanitizer")
    leaked = "ERROR: LeakSanitizer: detected memory leaks" in completed.stderr
    assert completed.returncode == (23 if leaked else 0), completed.stderr
    return leaked


@pytest.mark.parametrize("name", SANITIZED)
def test_fail_on_leak_gives_leaksanitizers_verdict(targets: Targets, name: str, tmp_path: Path) -> None:
    program = build(targets, name)
    # LeakSanitizer reports direct and indirect leaks; memcheck's definitely and indirectly lost are the same
    # blocks (it counts a pointer into a block as one to it: possibly lost is no leak to it).
    lost = any(kind in ("definite", "indirect") for kind, _ in EXPECTED[name])
    ours = subprocess.run([REPO_ROOT / "mprof", "run", "--quiet", "-o", tmp_path / "run.mprof", "--fail-on-leak",
                           "--", program], capture_output=True, text=True, timeout=300)
    assert ours.returncode == (23 if lost else 0), ours.stderr
    assert under_leaksanitizer(build(targets, name, "-fsanitize=address")) == lost
