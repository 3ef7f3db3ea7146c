"""Leak suppressions in LeakSanitizer's format and --fail-on-leak: a
program whose leaks are known, checked against the figures it was written
to leak and against LeakSanitizer itself, given the same suppression file."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import address_space
import pytest

from e2e_support import C_FLAGS, TARGETS, Targets, mprof

# What leaky_ci.c leaks, by function: (blocks, bytes).
KEEP_CONFIG = (3, 300)
REAL_LEAK = (5, 5000)
LIB_CACHE = (4, 128)
FROM_OUTER_A = (7, 448)
FROM_OUTER_B = (2, 128)
ALL = sum(b for _, b in (KEEP_CONFIG, REAL_LEAK, LIB_CACHE, FROM_OUTER_A, FROM_OUTER_B))

SUPPRESSIONS = """\
# accepted leaks
leak:keep_config
leak:libleaky.so

leak:^outer_a$
leak:no_such_function
"""



def run_under_leaksanitizer(program: Path, options: str) -> subprocess.CompletedProcess[str]:
    """The program built with -fsanitize=leak, run with LSAN_OPTIONS, not
    under mprof.  Where the address space is held below what LeakSanitizer
    reserves, its allocator fails its first check, and the test is skipped
    there (what it checked of mprof before stands)."""
    env = dict(os.environ, LSAN_OPTIONS=options)
    env.pop("LD_PRELOAD", None)
    lsan = subprocess.run([program], env=env, capture_output=True, text=True, timeout=60)
    if "LeakSanitizer: CHECK failed: sanitizer_allocator" in lsan.stderr:
        address_space.skip_if_too_small(address_space.LEAKSANITIZER_RESERVES, "LeakSanitizer")
    return lsan

def gate_line(leaked: int, limit: int) -> re.Pattern[str]:
    """The line --fail-on-leak ends with: its leaks are all definitely
    lost, as LeakSanitizer says; a monitor that did not classify them (no
    LEAK section) has them never freed, and says so."""
    return re.compile(rf"mprof: {leaked:,} bytes (definitely lost or indirectly lost|never freed), more than "
                      rf"--fail-on-leak={limit:,}(; the blocks were not classified \(the data files have no LEAK "
                      r"section\))?\n")


@pytest.fixture(scope="module")
def leaky(targets: Targets) -> Path:
    library = targets.build("libleaky.so", source="libleaky.c", shared=True)
    return targets.build("leaky_ci", str(library), f"-Wl,-rpath,{library.parent}")


@pytest.fixture(scope="module")
def profiled(leaky: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("leaky") / "leaky.mprof"
    mprof("run", "--quiet", "-o", output, leaky)
    return output


@pytest.fixture
def suppressions(tmp_path: Path) -> Path:
    path = tmp_path / "lsan.supp"
    path.write_text(SUPPRESSIONS)
    return path


def _report(*arguments: str | Path) -> dict[str, object]:
    return json.loads(mprof("report", "--format", "json", *arguments).stdout)  # type: ignore[no-any-return]


def test_without_suppressions_every_leak_is_listed(profiled: Path) -> None:
    document = _report(profiled)
    summary = document["summary"]
    assert isinstance(summary, dict)
    assert (summary["kept_bytes"] - summary["runtime_kept_bytes"], summary["suppressed_kept_bytes"]) == (ALL, 0)
    assert document["suppressed"] == []


@pytest.mark.slow
def test_suppressed_leaks_leave_the_table_and_are_counted(profiled: Path, suppressions: Path) -> None:
    document = _report(profiled, "--suppressions", suppressions)
    leaks = [(leak["path"], leak["kept_objects"], leak["kept_bytes"]) for leak in document["leaks"]  # type: ignore
             if not leak["runtime"]]
    # outer_a is above the five frames of the leak chains: the row both
    # paths share keeps outer_b's blocks alone.
    assert leaks == [("main > real_leak", *REAL_LEAK), ("... > l3 > l4 > l5 > l6 > leaf_alloc", *FROM_OUTER_B)]
    supp = str(suppressions)
    assert document["suppressed"] == [
        {"pattern": "^outer_a$", "origin": f"{supp}:5", "objects": FROM_OUTER_A[0], "bytes": FROM_OUTER_A[1]},
        {"pattern": "keep_config", "origin": f"{supp}:2", "objects": KEEP_CONFIG[0], "bytes": KEEP_CONFIG[1]},
        {"pattern": "libleaky.so", "origin": f"{supp}:3", "objects": LIB_CACHE[0], "bytes": LIB_CACHE[1]}]
    text = mprof("report", "--no-pager", "--tables", "leaks", profiled, "--suppressions", suppressions).stdout
    assert (f"Suppressed, not listed: 14 blocks, 876 bytes (leak:^outer_a$ ({supp}:5) 448; "
            f"leak:keep_config ({supp}:2) 300; leak:libleaky.so ({supp}:3) 128)") in text


@pytest.mark.slow
def test_the_same_file_leaves_leaksanitizer_the_same_bytes(leaky: Path, suppressions: Path, tmp_path: Path) -> None:
    left = REAL_LEAK[1] + FROM_OUTER_B[1]
    ours = mprof("run", "--quiet", "-o", tmp_path / "ours.mprof", "--suppressions", suppressions, "--fail-on-leak",
                 "--", leaky, check=False)
    assert ours.returncode == 23
    assert gate_line(left, 0).search(ours.stderr), ours.stderr
    # The same program built with LeakSanitizer, given the same file.
    library = tmp_path / "libleaky.so"
    subprocess.run(["gcc", *C_FLAGS, "-shared", "-fPIC", "-o", library, TARGETS / "libleaky.c"], check=True)
    program = tmp_path / "leaky_lsan"
    subprocess.run(["gcc", *C_FLAGS, "-fsanitize=leak", "-o", program, TARGETS / "leaky_ci.c", library,
                    f"-Wl,-rpath,{tmp_path}"], check=True)
    lsan = run_under_leaksanitizer(program, f"suppressions={suppressions}:exitcode=23:fast_unwind_on_malloc=0")
    assert lsan.returncode == 23, lsan.stderr
    leaked = re.search(r"SUMMARY: LeakSanitizer: (\d+) byte\(s\) leaked in (\d+) allocation", lsan.stderr)
    assert leaked and (int(leaked[2]), int(leaked[1])) == (REAL_LEAK[0] + FROM_OUTER_B[0], left)


@pytest.mark.slow
def test_fail_on_leak_only_over_the_limit(profiled: Path, suppressions: Path) -> None:
    left = REAL_LEAK[1] + FROM_OUTER_B[1]
    at_limit = mprof("report", "--no-pager", profiled, "--suppressions", suppressions, f"--fail-on-leak={left}")
    assert at_limit.returncode == 0 and at_limit.stderr == ""
    over = mprof("report", "--no-pager", profiled, "--suppressions", suppressions, f"--fail-on-leak={left - 1}",
                 check=False)
    assert over.returncode == 23
    assert gate_line(left, left - 1).fullmatch(over.stderr), over.stderr
    assert "main > real_leak" in over.stdout  # the leak table is printed
    unsuppressed = mprof("report", "--no-pager", profiled, f"--fail-on-leak={left}", check=False)
    assert unsuppressed.returncode == 23


@pytest.mark.slow
def test_mprof_run_fails_a_clean_exit_and_keeps_a_failure(leaky: Path, suppressions: Path, tmp_path: Path) -> None:
    # A bare --fail-on-leak before the program, the options ended with --.
    failed = mprof("run", "--quiet", "-o", tmp_path / "a.mprof", "--fail-on-leak", "--", leaky, check=False)
    assert failed.returncode == 23
    # Its kind where the monitor classified it: LeakSanitizer's direct leak.
    assert re.search(r"^\s+5\s+5,000\s+\(\s*\d+\)\s+(definitely lost\s+)?main > real_leak$", failed.stderr,
                     re.MULTILINE), failed.stderr
    assert gate_line(ALL, 0).search(failed.stderr.splitlines(keepends=True)[-1]), failed.stderr
    within = mprof("run", "--quiet", "-o", tmp_path / "b.mprof", "--fail-on-leak=6000", "--suppressions",
                   suppressions, leaky, check=False)
    assert (within.returncode, within.stderr) == (0, "")
    # The program's own failure stands.
    own = mprof("run", "--quiet", "-o", tmp_path / "c.mprof", "--fail-on-leak=0", leaky, "3", check=False)
    assert (own.returncode, own.stderr) == (3, "")


def test_a_bad_suppression_file_gets_one_line(profiled: Path, tmp_path: Path) -> None:
    missing = mprof("report", profiled, "--suppressions", tmp_path / "none.supp", check=False)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "none.supp" in missing.stderr
    bad = tmp_path / "bad.supp"
    bad.write_text("leak:ok\nno colon here\n")
    refused = mprof("report", profiled, "--suppressions", bad, check=False)
    assert refused.returncode == 1
    assert refused.stderr == f"mprof: {bad}:2: not a suppression (TYPE:PATTERN): 'no colon here'\n"


@pytest.mark.slow
def test_the_programs_own_suppressions_apply_as_under_leaksanitizer(targets: Targets, tmp_path: Path) -> None:
    library = targets.build("libleaky.so", source="libleaky.c", shared=True)
    program = tmp_path / "leaky_own"
    subprocess.run(["gcc", *C_FLAGS, "-DOWN_SUPPRESSIONS", "-o", program, TARGETS / "leaky_ci.c", library,
                    f"-Wl,-rpath,{library.parent}"], check=True)
    output = tmp_path / "own.mprof"
    mprof("run", "--quiet", "-o", output, program)
    document = _report(output)
    origin = "leaky_own's __lsan_default_suppressions"
    assert document["suppressed"] == [
        {"pattern": "keep_config", "origin": f"{origin}:2", "objects": KEEP_CONFIG[0], "bytes": KEEP_CONFIG[1]},
        {"pattern": "outer_b", "origin": f"{origin}:3", "objects": FROM_OUTER_B[0], "bytes": FROM_OUTER_B[1]}]
    left = ALL - KEEP_CONFIG[1] - FROM_OUTER_B[1]
    assert mprof("report", output, f"--fail-on-leak={left}").returncode == 0
    # LeakSanitizer, built into the same program, leaves the same bytes.
    lsan_program = tmp_path / "leaky_own_lsan"
    subprocess.run(["gcc", *C_FLAGS, "-DOWN_SUPPRESSIONS", "-fsanitize=leak", "-o", lsan_program,
                    TARGETS / "leaky_ci.c", library, f"-Wl,-rpath,{library.parent}"], check=True)
    lsan = run_under_leaksanitizer(lsan_program, "exitcode=23:fast_unwind_on_malloc=0")
    assert f"SUMMARY: LeakSanitizer: {left} byte(s) leaked in " in lsan.stderr, lsan.stderr
