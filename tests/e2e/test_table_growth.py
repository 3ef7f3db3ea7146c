"""The monitor's tables past their first sizes: the pointer map's shards,
the registry of call chains, each thread's index of sites and the
gathering of records at exit all grow as a program needs, and lose nothing
when they do."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from e2e_support import REPO_ROOT, Run, Targets, in_module, module_named
from mprof.reducer import tree

LIVE_BLOCKS = 100_000  # about 1,560 per shard of 64: five growths of each, from 256 slots
SITES = 5_000  # past the registry's and the sites' first 1,024 and the gathering's 4,096


def test_blocks_live_while_the_pointer_map_grows_are_each_freed(targets: Targets,
                                                                 profile: Callable[..., Run]) -> None:
    s = profile([targets.build("many_live"), str(LIVE_BLOCKS)]).data().summary
    # many_live.c: its array of pointers and the blocks of 24 bytes, all live
    # at once, then all freed; a block lost when its shard grew would be an
    # unknown free instead.
    blocks = LIVE_BLOCKS + 1
    array_bytes = 8 * LIVE_BLOCKS
    assert (s.allocs, s.frees, s.unknown_frees) == (blocks, blocks, 0)
    assert s.bytes_allocated == s.bytes_freed == array_bytes + 24 * LIVE_BLOCKS
    assert (s.max_live_objects, s.max_live_bytes) == (blocks, array_bytes + 24 * LIVE_BLOCKS)


@pytest.mark.slow
def test_five_thousand_call_sites_are_each_counted_apart(targets: Targets, profile: Callable[..., Run]) -> None:
    program = targets.build("many_sites")
    data = profile([program]).data()
    main = module_named(data, program)
    # many_sites.c: call site n allocates n + 1 bytes once and keeps them.
    expected = [(n + 1, 1, 0) for n in range(SITES)]
    s = data.summary
    assert (s.allocs, s.frees, s.bytes_allocated) == (SITES, 0, SITES * (SITES + 1) // 2)
    totals = tree.totals(data)
    sites = sorted((sum(site.bytes), site.calls, site.frees) for site in totals.sites if in_module(site.addr, main))
    assert sites == expected
    chains = sorted((chain.bytes, chain.allocs, chain.frees) for chain in tree.totals(data).leaks
                    if in_module(chain.addrs[0], main))
    assert chains == expected
    # Pairs are per function: main calls malloc, 5,000 times.
    pairs = [(sum(pair.bytes), pair.calls) for pair in tree.totals(data).pairs if in_module(pair.caller, main)]
    assert pairs == [(s.bytes_allocated, SITES)]


def test_paths_past_the_last_id_share_it(targets: Targets) -> None:
    # path_limit.c: the path registry alone, with a limit of 100 path ids
    # instead of 2^24 - 1, given 110 paths.  The first 100 get ids 0 to 99;
    # the ten after share the last, 99, which stays the 100th path's.
    monitor = REPO_ROOT / "monitor"
    program = targets.build("path_limit", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
                            "-DPATH_ID_LIMIT=100u", f"-I{monitor}",
                            *(str(monitor / name) for name in ("paths.c", "entry_table.c", "arena.c")))
    completed = subprocess.run([program], capture_output=True, text=True, timeout=60, check=True)
    assert completed.stdout.split() == ["100", "99", "11", "1", "1"]


def test_a_region_of_the_monitors_grows_in_place_and_moves_keeping_its_bytes(targets: Targets) -> None:
    # region_grow.c: the growths that lost cc1plus's call paths (a move of a
    # region grown in place after a move: two mappings, which mremap does
    # not move together), then 177,810 unknown frees.
    monitor = REPO_ROOT / "monitor"
    program = targets.build("region_grow", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
                            f"-I{monitor}", str(monitor / "arena.c"))
    completed = subprocess.run([program], capture_output=True, text=True, timeout=60)
    assert (completed.returncode, completed.stdout) == (0, "kept 16384 bytes through 3 growths\n")
