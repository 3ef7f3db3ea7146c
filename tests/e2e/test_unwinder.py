"""The monitor's own stack walk (cached .eh_frame rules) against libunwind's
unw_backtrace on the same programs, and the pointer map's wide slots."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import MPROF, REPO_ROOT, Run, Targets
from mprof.reducer import tree
from mprof.reducer.records import DataFile

OPTIMISED = ["-O2", "-fomit-frame-pointer"]


def module_relative(data: DataFile) -> Callable[[int], tuple[str, int]]:
    """Addresses as (module file name, offset), which do not change from run to run."""
    def relative(address: int) -> tuple[str, int]:
        for module in data.modules:
            if module.start <= address < module.end:
                return Path(module.path).name, address - module.bias
        return "?", address
    return relative


def chains(data: DataFile) -> tuple[dict, dict]:
    """Pairs and leak chains with their counts, keyed by module-relative addresses."""
    relative = module_relative(data)
    pairs = {(relative(p.caller), relative(p.callee)): (p.calls, sum(p.bytes)) for p in tree.totals(data).pairs}
    leaks = {tuple(map(relative, c.addrs)): (c.allocs, c.frees, c.bytes) for c in tree.totals(data).leaks}
    return pairs, leaks


def leak_paths(output: Path) -> dict[str, tuple[int, int]]:
    completed = subprocess.run([MPROF, "report", "--format", "json", output], capture_output=True, text=True,
                               check=True)
    paths: dict[str, tuple[int, int]] = {}
    for row in json.loads(completed.stdout)["leaks"]:  # one path may be two rows: code of two loads
        objects, kept = paths.get(row["path"], (0, 0))
        paths[row["path"]] = (objects + row["kept_objects"], kept + row["kept_bytes"])
    return paths


def both_walks(profile: Callable[..., Run], command: list) -> tuple[Run, Run]:
    return (profile(command, name="rules.mprof", MPROF_UNWINDER="rules"),
            profile(command, name="libunwind.mprof", MPROF_UNWINDER="libunwind"))


def test_every_frame_shape_walks_as_libunwind_walks_it(targets: Targets, profile: Callable[..., Run]) -> None:
    rules, libunwind = both_walks(profile, [targets.build("frames", *OPTIMISED)])
    assert chains(rules.data()) == chains(libunwind.data())
    paths = leak_paths(rules.output)
    assert paths["main > small_frame > leaf"] == (3, 3 * 101)
    assert paths["main > large_frame > leaf"] == (3, 3 * 102)  # a 70,000-byte frame
    assert paths["main > frame_pointer_frame > leaf"] == (3, 3 * 104)  # alloca: the CFA is rbp-based
    assert paths["main > recursive > recursive > leaf"] == (3, 3 * 201)
    assert paths["... > recursive > recursive > recursive > recursive > leaf"] == (9, 3 * (214 + 227 + 240))
    # Through libc's frames, and through the signal frame (libunwind steps it).
    [qsort_path] = [path for path in paths if path.endswith("> compare > leaf")]
    assert "__qsort_r" in qsort_path and paths[qsort_path] == (3, 3 * 103)
    [signal_path] = [path for path in paths if path.endswith("> on_signal > small_frame > leaf")]
    assert paths[signal_path] == (3, 3 * 105)
    # A coroutine's stack ends at makecontext's start frame, not at main.
    [coroutine_path] = [path for path in paths if path.endswith("> coroutine_body > small_frame > leaf")]
    assert paths[coroutine_path] == (3, 3 * 106)
    assert rules.data().summary.truncated_chains == 0


def reloaded_in_place(targets: Targets, profile: Callable[..., Run], first: Path, second: Path) -> Run:
    """A run of reload_main in which second was mapped where first had been.

    Where the loader puts the second plugin depends on what else was mapped
    meanwhile, which the monitor's own tables can be (they come from mmap,
    as they grow): so the plugins are tried under names of other lengths,
    which change what is allocated before, until one lands in place."""
    main = targets.build("reload_main", "-ldl")
    for attempt in range(8):
        directory = first.parent / ("p" * (attempt + 1))
        directory.mkdir(exist_ok=True)
        copies = [directory / first.name, directory / second.name]
        for original, copy in zip((first, second), copies, strict=True):
            shutil.copy(original, copy)
        run = profile([main, *copies], name=f"reload{attempt}.mprof")
        loaded_at = run.completed.stdout.split()
        if loaded_at[0] == loaded_at[1]:
            return run
    raise AssertionError("the second plugin was never mapped where the first one was")


@pytest.mark.slow
def test_code_loaded_where_unloaded_code_was_is_walked_with_its_own_rules(targets: Targets,
                                                                         profile: Callable[..., Run]) -> None:
    # The same instructions with different frame sizes (both sub $imm32, %rsp),
    # so the second plugin's return addresses are the first one's.
    plugins = [targets.build(f"reload_{size}.so", *OPTIMISED, f"-DFRAME_BYTES={size}", source="reload_plugin.c",
                             shared=True) for size in (70000, 140000)]
    # Not compared with libunwind: its per-thread cache is never flushed on
    # dlclose, and libunwind 1.6 stops the second plugin's walk at inner.
    run = reloaded_in_place(targets, profile, *plugins)
    assert leak_paths(run.output)["main > plugin_entry > inner"] == (2, 301 + 302)


def test_each_address_resolves_in_the_load_it_was_taken_in(targets: Targets, profile: Callable[..., Run]) -> None:
    plain = targets.build("reload_plain.so", "-O2", "-DFRAME_BYTES=64", source="reload_plugin.c", shared=True)
    padded = targets.build("reload_padded.so", "-O2", "-DFRAME_BYTES=64", "-DPADDING", source="reload_plugin.c",
                           shared=True)
    run = reloaded_in_place(targets, profile, plain, padded)
    plain, padded = (Path(path) for path in run.completed.args[1:3])
    # plain's block (301 bytes) was taken where padded's code now is: it
    # resolves in plain's file all the same, and the two never merge.
    report = json.loads(subprocess.run([MPROF, "report", "--format", "json", run.output], capture_output=True,
                                       text=True, check=True).stdout)
    kept = sorted((row["path"], row["kept_bytes"]) for row in report["leaks"] if "plugin_entry" in row["path"])
    assert kept == [("main > plugin_entry > inner", 301), ("main > plugin_entry > inner", 302)]
    modules = {entry["module"] for entry in report["call_graph"] if entry["function"] == "inner"}
    assert modules == {str(plain), str(padded)}
    # The unloaded one is listed at its tagged addresses (bit 48 and up).
    data = run.data()
    [listed] = [m for m in data.modules if Path(m.path) == plain]
    assert listed.unloaded and listed.start >> 48 == 1
    # Only plain's own addresses moved there: each plugin was entered once
    # from the same place in main, which stays main's address.
    relative = module_relative(data)
    plugins = {"reload_plain.so", "reload_padded.so"}
    into = sorted((relative(p.caller), relative(p.callee)[0], p.calls, sum(p.bytes)) for p in tree.totals(data).pairs
                  if relative(p.callee)[0] in plugins and relative(p.caller)[0] not in plugins)
    assert [(caller[0], callee, calls, size) for caller, callee, calls, size in into] == \
        [("reload_main", "reload_padded.so", 1, 302), ("reload_main", "reload_plain.so", 1, 301)]
    assert into[0][0] == into[1][0]
    assert all(relative(address)[0] != "?" for p in tree.totals(data).pairs for address in (p.caller, p.callee))


def test_kinds_past_the_numbered_ones_take_wide_slots(targets: Targets, profile: Callable[..., Run]) -> None:
    data = profile([targets.build("kinds")]).data()
    allocations = 17 * 65536
    assert (data.summary.allocs, data.summary.frees) == (allocations, allocations - 16)
    assert data.summary.bytes_allocated - data.summary.bytes_freed == 589824
    assert data.summary.unknown_frees == 0
    kept = sorted((c.allocs - c.frees, c.bytes - c.bytes_freed) for c in tree.totals(data).leaks if c.allocs > c.frees)
    assert kept == [(8, 294912), (8, 294912)]  # site 15 (numbered kinds, then wide) and site 16 (all wide)


@pytest.mark.parametrize("value", ["fast", ""])
def test_an_unknown_unwinder_is_refused_in_the_data_file(targets: Targets, profile: Callable[..., Run],
                                                        value: str) -> None:
    run = profile([targets.build("leaf")], MPROF_UNWINDER=value)
    assert run.completed.stderr == ""
    assert run.data().program.refused_settings == ((f"MPROF_UNWINDER={value}",) if value else ())
    s = run.data().summary
    assert (s.allocs, s.frees, s.bytes_allocated) == (40, 36, 16000)  # leaf.c's own figures


def test_the_rule_reader_on_frame_information_written_by_hand(targets: Targets) -> None:
    # cfi_frames.c links the monitor's reader with bytes of its own, each
    # entry ending where an inaccessible page begins.
    program = targets.build("cfi_frames", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
                            f"-I{REPO_ROOT / 'monitor'}", str(REPO_ROOT / "monitor" / "cfi.c"))
    completed = subprocess.run([program], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    # The CIE: CFA rsp+8, return address at CFA-8.  The FDE: push %rbp at
    # +0 (1 byte), mov %rsp,%rbp at +1 (3 bytes), 0x100 bytes in all.
    assert completed.stdout.splitlines() == [
        "entry: step cfa=rsp+8 ra=-8 bp=same",
        "after push: step cfa=rsp+16 ra=-8 bp=-16",
        "before mov ends: step cfa=rsp+16 ra=-8 bp=-16",
        "frame pointer: step cfa=rbp+16 ra=-8 bp=-16",
        "last byte: step cfa=rbp+16 ra=-8 bp=-16",
        "past the end: unknown",
        "outermost: end",  # DW_CFA_undefined on the return address
        "cut short: unknown",  # an operand running past the entry is not read, so no crash
    ]
