"""Each allocator entry point keeps libc's semantics and is counted exactly:
the target programs check the semantics and exit non-zero if one breaks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import Run, Targets, in_module, module_named, path_name
from mprof.cli.inputs import load_profile
from mprof.reducer import tree


def sizes(run: Run) -> dict[int, tuple[int, int]]:
    return {b.size: (b.allocs, b.frees) for b in run.data().bins}


@pytest.mark.parametrize("blocks", ["headers", "map"])
def test_memalign_family(targets: Targets, profile: Callable[..., Run], blocks: str) -> None:
    run = profile([targets.build("memalign")], MPROF_BLOCKS=blocks)
    s = run.data().summary
    # posix_memalign 100, aligned_alloc 256, memalign 300, valloc and pvalloc 1000;
    # the odd alignment fails and allocates nothing.
    assert (s.memalign_calls, s.failed_allocs) == (6, 1)
    assert (s.allocs, s.frees, s.bytes_allocated, s.bytes_freed) == (5, 5, 2656, 2656)
    assert sizes(run) == {100: (1, 1), 256: (1, 1), 300: (1, 1), 1000: (2, 2)}


@pytest.mark.parametrize("blocks", ["headers", "map"])
def test_realloc_and_calloc_edge_cases(targets: Targets, profile: Callable[..., Run], blocks: str) -> None:
    run = profile([targets.build("realloc")], MPROF_BLOCKS=blocks)
    s = run.data().summary
    # realloc(NULL, 10), grows to 1000, shrinks to 5, realloc(p, 0) frees;
    # calloc 16 x 4; reallocarray to 128; free.  Failures: calloc and
    # reallocarray overflow, the impossible realloc.
    assert (s.realloc_calls, s.calloc_calls, s.failed_allocs) == (7, 2, 3)
    assert (s.allocs, s.frees, s.bytes_allocated, s.bytes_freed) == (5, 5, 1207, 1207)
    assert (s.free_calls, s.free_null, s.unknown_frees) == (2, 1, 0)
    assert sizes(run) == {5: (1, 1), 10: (1, 1), 64: (1, 1), 128: (1, 1), 1000: (1, 1)}
    assert s.max_live_bytes == 1000


@pytest.mark.parametrize("blocks", ["headers", "map"])
def test_cxx_new_and_delete(targets: Targets, profile: Callable[..., Run], blocks: str) -> None:
    run = profile([targets.build("cxx")], MPROF_BLOCKS=blocks)
    data = run.data()
    s = data.summary
    # 10 blocks from new (two of them kept at exit), two failed news (one
    # throwing, one nothrow), nine deletes (the local vector's at the end of
    # main, and one of NULL); libstdc++ adds its emergency pool and the
    # bad_alloc exception with malloc.
    assert (s.new_calls, s.delete_calls, s.failed_allocs, s.free_null) == (12, 9, 2, 1)
    expected_new = {4: (2, 2), 16: (1, 0), 20: (1, 1), 24: (2, 1), 40: (1, 1), 64: (2, 2), 192: (1, 1)}
    assert {size: counts for size, counts in sizes(run).items() if size in expected_new} == expected_new
    program = module_named(data, Path(data.program.exe))
    own = [site for site in tree.totals(data).sites if in_module(site.addr, program)]
    assert sum(site.calls for site in own) == 10
    assert sum(sum(site.bytes) for site in own) == 4 + 40 + 4 + 20 + 64 + 192 + 64 + 24 + 24 + 16


@pytest.mark.parametrize("blocks", ["headers", "map"])
def test_foreign_pointers(targets: Targets, profile: Callable[..., Run], blocks: str) -> None:
    s = profile([targets.build("foreign")], MPROF_BLOCKS=blocks).data().summary
    # free and realloc of blocks from __libc_malloc: two unknown frees, and
    # realloc's new 4096-byte block is the program's.
    assert (s.unknown_frees, s.allocs, s.frees) == (2, 1, 1)
    assert (s.bytes_allocated, s.bytes_freed) == (4096, 4096)


def test_block_freed_behind_the_monitors_back(targets: Targets, profile: Callable[..., Run]) -> None:
    s = profile([targets.build("foreign"), "hidden"], MPROF_BLOCKS="map").data().summary
    # The block freed with __libc_free stays kept, since the monitor never
    # saw its free.
    assert (s.unknown_frees, s.allocs, s.frees) == (2, 2, 1)
    assert (s.bytes_allocated, s.bytes_freed) == (48 + 4096, 4096)


def test_early_allocations_are_served_and_counted(targets: Targets, profile: Callable[..., Run]) -> None:
    s = profile([targets.build("leaf")]).data().summary
    # dlsym allocates while the monitor resolves the real allocator: those
    # blocks come from the monitor's early pool, are not the program's, and
    # are counted apart.
    assert s.early_allocs >= 1 and s.early_frees <= s.early_allocs
    assert (s.allocs, s.frees, s.bytes_allocated) == (40, 36, 16000)


def test_a_start_before_the_c_library_reads_the_settings(targets: Targets, profile: Callable[..., Run]) -> None:
    """tests/targets/preinit_malloc.c allocates from its .preinit_array,
    before the C library has set environ: the monitor starts there, and
    still writes MPROF_OUTPUT's file, with those blocks in it."""
    run = profile([targets.build("preinit_malloc")])
    assert run.completed.stdout == "ok\n"
    s = run.data().summary
    assert (s.allocs, s.frees, s.bytes_allocated, s.bytes_freed) == (5, 3, 3000 + 1000, 1000 + 1000)
    model = load_profile([run.output])
    early = [path for path in model.paths if path_name(model, path).endswith("before_libc > early_blocks")]
    assert (sum(p.allocs for p in early), sum(p.frees for p in early), sum(sum(p.bytes) for p in early)) == (3, 1, 3000)


def test_dlclosed_library_stays_in_the_module_list(targets: Targets, profile: Callable[..., Run]) -> None:
    plugin = targets.build("plugin.so", source="plugin.c", shared=True)
    data = profile([targets.build("dlclose_main", "-ldl"), plugin]).data()
    module = module_named(data, plugin)
    assert module.unloaded and len(module.build_id) == 20
    [site] = [site for site in tree.totals(data).sites if in_module(site.addr, module)]
    assert (site.calls, site.frees, sum(site.bytes), sum(site.freed)) == (3, 2, 231, 154)
    # Three call sites in main, so three partial chains through the plugin.
    chains = [c for c in tree.totals(data).leaks if in_module(c.addrs[0], module)]
    assert sorted((c.allocs, c.frees) for c in chains) == [(1, 0), (1, 1), (1, 1)]
    assert not any(m.unloaded for m in data.modules if m is not module)
    # The three calls into the plugin: their callers stay main's addresses
    # when the plugin's are moved aside at dlclose.
    program = module_named(data, targets.build("dlclose_main", "-ldl"))
    into_plugin = [p for p in tree.totals(data).pairs if in_module(p.callee, module)]
    assert sorted((in_module(p.caller, program), p.calls, sum(p.bytes)) for p in into_plugin) == [(True, 1, 77)] * 3
