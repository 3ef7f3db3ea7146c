"""Mutation testing of the C monitor and of mprof-inject: applies one
operator or boundary mutation at a time to a C file in a scratch copy of
the tree, rebuilds what it goes into, and runs the end-to-end tests that
exercise it.  A mutant the tests fail on (or hang on) is killed; one they
pass survives and is listed with its file, line and change, and with the
reason when tests/mutate/equivalent.txt lists it as equivalent (by the key
path:line:before->after; the exit status is non-zero when a survivor is not
listed there).

    python3 tests/mutate/mutate_monitor.py --named [--jobs 2] [--log build/mutate-named.log]
    python3 tests/mutate/mutate_monitor.py --limit N [--seed S]
    python3 tests/mutate/mutate_monitor.py --keys monitor/mapped.c:51:==->!=,... [--log build/mutate-named.log]
    python3 tests/mutate/mutate_monitor.py --summary --log build/mutate-named.log

--named runs every mutant of the files tests/mutate/c_tests.py names, each
against its own file's tests; without it, --limit mutants are drawn at
random (seeded, so a draw can be repeated) from the rest of monitor/*.c and
run against one fixed list of tests.  --files narrows either to some files;
--keys runs the named mutants alone (to retry survivors), each against its
file's tests, and with --log records their new verdicts in the --named log.
--jobs runs that many mutants at once, each in a scratch tree of its own.
With --log, each mutant's verdict is appended to the log as it comes, and a
mutant already in the log is not run again, so that a stopped run resumes
where it stopped (the log holds a digest of the sources it was made from,
and one of other sources is moved aside, never over an earlier one);
--summary prints the log's counts per file without running anything, and
refuses a log of other sources rather than touch it.

Mutations: < <= > >= == != swapped for their boundary or opposite,
&& and || for each other, binary + and - for each other, and a decimal
constant n for n + 1.  Comments, strings and preprocessor lines are left
alone.  A mutant that does not compile (-Werror catches many) is counted
apart and not run.  The named files' mutants run in a seeded random order,
so that a run stopped part way has sampled every file alike.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import c_tests
import equivalents

REPO_ROOT = Path(__file__).resolve().parents[2]

SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "&&": "||", "||": "&&",
         "+": "-", "-": "+"}
# An operator token with what may not touch it on either side, so that <<,
# ->, ++, +=, -- and the like are never taken for one.
OPERATOR = re.compile(r"(?<![<>=!&|+\-*/%^~])(<=|>=|==|!=|&&|\|\||<|>|\+|-)(?![<>=&|+\-])")
CONSTANT = re.compile(r"(?<![\w.])(\d+)(?![\w.])")


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the tree
    offset: int
    before: str
    after: str
    line: int

    def describe(self) -> str:
        return f"{self.path}:{self.line}: {self.before} -> {self.after}"

    def key(self) -> str:
        return f"{self.path}:{self.line}:{self.before}->{self.after}"


def masked(source: str) -> str:
    """The source with comments, string and character literals and
    preprocessor lines blanked out (offsets kept), so that no mutation
    lands in them."""
    out = list(source)
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|^[ \t]*#[^\n]*(?:\\\n[^\n]*)*',
                         re.DOTALL | re.MULTILINE)
    for match in pattern.finditer(source):
        for i in range(match.start(), match.end()):
            if out[i] != "\n":
                out[i] = " "
    return "".join(out)


def binary_minus_or_plus(text: str, at: int) -> bool:
    """A + or - between two operands, not a sign: what precedes it (spaces
    skipped) ends an operand."""
    before = text[:at].rstrip()
    return bool(before) and (before[-1].isalnum() or before[-1] in "_)]")


def mutants_of(path: Path) -> list[Mutant]:
    source = path.read_text()
    text = masked(source)
    relative = str(path.relative_to(REPO_ROOT))
    found = []
    for match in OPERATOR.finditer(text):
        token = match.group(1)
        if token in "+-" and not binary_minus_or_plus(text, match.start()):
            continue
        # < and > inside a cast or declaration never occur in C, but a
        # pointer's -> is excluded by the pattern; that leaves comparisons.
        found.append(Mutant(relative, match.start(), token, SWAPS[token], text.count("\n", 0, match.start()) + 1))
    for match in CONSTANT.finditer(text):
        value = int(match.group(1))
        found.append(Mutant(relative, match.start(), match.group(1), str(value + 1),
                            text.count("\n", 0, match.start()) + 1))
    return found


def apply(tree: Path, mutant: Mutant, original: str) -> None:
    end = mutant.offset + len(mutant.before)
    assert original[mutant.offset:end] == mutant.before
    (tree / mutant.path).write_text(original[:mutant.offset] + mutant.after + original[end:])


def run(command: list[str], tree: Path, timeout: float, show_failure: bool = False,
        failed: list[str] | None = None) -> int | None:
    """The command's exit status, or None when it ran past its timeout; a
    hung test's programs go with it (its whole process group is killed).
    The tests pytest names as failed are added to failed."""
    with subprocess.Popen(command, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          start_new_session=True) as process:
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return None
    if failed is not None:
        failed += re.findall(r"^(?:FAILED|ERROR) (\S+)", output.decode(errors="replace"), re.MULTILINE)
    if process.returncode and show_failure:
        sys.stderr.write(output.decode(errors="replace")[-3000:])
    return process.returncode


def make_tree(tree: Path) -> None:
    """A scratch copy of the tracked files, with the venv's path and a copy
    of the build (its mtimes kept, so that make finds it up to date); the
    downloaded tools are shared, not copied."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        target = tree / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, target, follow_symlinks=False)
    (tree / ".venv").symlink_to(REPO_ROOT / ".venv")
    shutil.copytree(REPO_ROOT / "build", tree / "build", symlinks=True,
                    ignore=shutil.ignore_patterns("tools", "mutate*", "mutmut*"))
    if (REPO_ROOT / "build" / "tools").exists():
        (tree / "build" / "tools").symlink_to(REPO_ROOT / "build" / "tools")


VERDICTS = ("killed", "hung", "SURVIVED", "does not compile")


@dataclass
class Log:
    """The verdicts so far, by mutant (key and offset), kept in a file when
    a path is given."""
    path: Path | None
    digest: str
    verdicts: dict[tuple[str, int], str]
    lock: threading.Lock

    @staticmethod
    def open(path: Path | None, sources: list[Path], reading_only: bool = False) -> Log:
        digest = hashlib.sha1(b"".join(source.read_bytes() for source in sorted(sources))).hexdigest()
        verdicts: dict[tuple[str, int], str] = {}
        if path and path.exists() and path.read_text().split("\n", 1)[0] != f"# sources {digest}":
            # A log of other sources (or other --files) says nothing of these.
            if reading_only:
                raise SystemExit(f"{path}: a log of other sources (or of other --files); left as it is")
            # Hours of verdicts: an earlier log set aside is never overwritten.
            aside = next(candidate for number in range(1, 1000)
                         if not (candidate := path.with_name(f"{path.name}.old{number}")).exists())
            print(f"{path}: of other sources; moved to {aside.name}, starting afresh", flush=True)
            path.replace(aside)
        if path and path.exists():
            for line in path.read_text().splitlines()[1:]:
                verdict, key, offset = line.split("\t")[:3]
                verdicts[key, int(offset)] = verdict
        elif path:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# sources {digest}\n")
        return Log(path, digest, verdicts, threading.Lock())

    def add(self, mutant: Mutant, verdict: str, seconds: float, failed: list[str]) -> None:
        with self.lock:
            self.verdicts[mutant.key(), mutant.offset] = verdict
            if self.path:
                with self.path.open("a") as out:
                    out.write(f"{verdict}\t{mutant.key()}\t{mutant.offset}\t{seconds:.0f}\t{' '.join(failed)}\n")


def tests_of(mutant: Mutant, named: bool) -> tuple[tuple[str, ...], int]:
    covered = c_tests.FILES.get(mutant.path)
    if covered and named:
        return covered.tests, covered.seconds
    return c_tests.RANDOM_DRAW_TESTS, c_tests.RANDOM_DRAW_SECONDS


def pytest_command(tree: Path, tests: tuple[str, ...]) -> list[str]:
    # Each tree's own temporary directory: two runs at once never share one.
    return [str(REPO_ROOT / ".venv" / "bin" / "python"), "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
            f"--basetemp={tree.parent / (tree.name + '-tmp')}", *tests]


def try_mutant(tree: Path, mutant: Mutant, named: bool, failed: list[str]) -> str:
    tests, seconds = tests_of(mutant, named)
    original = (tree / mutant.path).read_text()
    apply(tree, mutant, original)
    try:
        if run(["make", "-s", *c_tests.BUILD], tree, 600) != 0:
            return "does not compile"
        status = run(pytest_command(tree, tests), tree, seconds, failed=failed)
        return "hung" if status is None else "killed" if status else "SURVIVED"
    finally:
        (tree / mutant.path).write_text(original)


def summary(mutants: list[Mutant], log: Log) -> list[Mutant]:
    """Prints the counts per file of the mutants given; returns the
    survivors."""
    by_file: dict[str, Counter[str]] = {}
    survived = []
    for mutant in mutants:
        verdict = log.verdicts.get((mutant.key(), mutant.offset), "not reached")
        by_file.setdefault(mutant.path, Counter())[verdict] += 1
        if verdict == "SURVIVED":
            survived.append(mutant)
    print(f"{'file':<22} {'mutants':>7} {'uncompiled':>10} {'killed':>6} {'(hung)':>6} {'survived':>8} "
          f"{'not run':>7}")
    total: Counter[str] = Counter()
    for path, counts in sorted(by_file.items()) + [("total", total)]:
        if path != "total":
            total.update(counts)
        print(f"{path:<22} {sum(counts.values()):>7} {counts['does not compile']:>10} "
              f"{counts['killed'] + counts['hung']:>6} {counts['hung']:>6} {counts['SURVIVED']:>8} "
              f"{counts['not reached']:>7}")
    explained = equivalents.read()
    for mutant in survived:
        reason = explained.get(mutant.key())
        print(f"  survived: {mutant.describe()}" + (f" (equivalent: {reason})" if reason else " (unexplained)"))
    return survived


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--named", action="store_true",
                        help="every mutant of the files tests/mutate/c_tests.py names, against their own tests")
    parser.add_argument("--limit", type=int, default=0, help="mutants drawn at random (default: all)")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the draw and of the order")
    parser.add_argument("--files", default="",
                        help="comma-separated C files (a bare name is one of monitor/; default: all)")
    parser.add_argument("--keys", default="",
                        help="comma-separated mutants to run, as path:line:before->after (to retry survivors)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once, each in a tree of its own")
    parser.add_argument("--log", type=Path, help="file the verdicts are appended to; its mutants are not rerun")
    parser.add_argument("--summary", action="store_true", help="print the log's counts; run nothing")
    args = parser.parse_args(argv)
    named = args.named or bool(args.keys)
    if args.files:
        sources = [REPO_ROOT / (name if "/" in name else "monitor/" + name) for name in args.files.split(",")]
    elif named:
        sources = [REPO_ROOT / path for path in c_tests.FILES]
    else:
        sources = [path for path in sorted((REPO_ROOT / "monitor").glob("*.c"))
                   if str(path.relative_to(REPO_ROOT)) not in c_tests.FILES]
    if args.keys:
        sources = sorted({REPO_ROOT / key.split(":")[0] for key in args.keys.split(",")})
    everything = [mutant for source in sources for mutant in mutants_of(source)]
    if args.keys:
        wanted = set(args.keys.split(","))
        everything = [mutant for mutant in everything if mutant.key() in wanted]
        # A key names every mutant alike on its line (two + on one line).
        missing = wanted - {mutant.key() for mutant in everything}
        if missing:
            parser.error(f"no such mutant: {', '.join(sorted(missing))}")
    chosen = random.Random(args.seed).sample(everything, args.limit) if 0 < args.limit < len(everything) \
        else list(everything)
    if named:
        random.Random(args.seed).shuffle(chosen)
    else:
        chosen.sort(key=lambda m: (m.path, m.offset))
    # --keys with --log reruns its mutants (survivors, after new tests)
    # whatever the --named log says of them; their verdicts, appended, are
    # the ones the log's reader keeps.
    log = Log.open(args.log, [REPO_ROOT / path for path in c_tests.FILES] if args.keys else sources,
                   reading_only=args.summary or bool(args.keys))
    if args.summary:
        survived = summary(chosen, log)
        return 1 if any(mutant.key() not in equivalents.read() for mutant in survived) else 0
    to_run = chosen if args.keys else [mutant for mutant in chosen if (mutant.key(), mutant.offset) not in log.verdicts]
    print(f"{len(everything)} mutants in {len(sources)} files; {len(chosen)} chosen, {len(to_run)} to run",
          flush=True)

    # In the build directory, not in /tmp, which may be closed to other users:
    # tests run the monitor and mprof-inject in processes that drop root.
    # (make_tree leaves mutate* out of its copies of build/.)
    (REPO_ROOT / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mutate-scratch-", dir=REPO_ROOT / "build") as scratch:
        os.chmod(scratch, 0o755)
        trees = [Path(scratch) / f"tree{number}" for number in range(max(1, args.jobs))]
        for tree in trees:
            make_tree(tree)
        baseline = tuple(dict.fromkeys(test for mutant in chosen for test in tests_of(mutant, named)[0]))
        # Once more on a failure, to tell a test that fails on a loaded
        # machine now and then (its name is in each killed mutant's line of
        # the log) from one that fails on the code.
        if run(["make", "-s", "all"], trees[0], 600, True) != 0 or \
                all(run(pytest_command(trees[0], baseline), trees[0], 1800, True) != 0 for _ in range(2)):
            print("the unmutated tree does not pass its tests", file=sys.stderr)
            return 1
        free: queue.Queue[Path] = queue.Queue()
        for tree in trees:
            free.put(tree)
        done = iter(range(1, len(to_run) + 1))

        def one(mutant: Mutant) -> None:
            tree = free.get()
            try:
                started = time.monotonic()
                failed: list[str] = []
                verdict = try_mutant(tree, mutant, named, failed)
                seconds = time.monotonic() - started
                log.add(mutant, verdict, seconds, failed)
                print(f"[{next(done)}/{len(to_run)}] {mutant.describe()}: {verdict} ({seconds:.0f} s)", flush=True)
            finally:
                free.put(tree)

        with ThreadPoolExecutor(max_workers=len(trees)) as pool:
            for future in [pool.submit(one, mutant) for mutant in to_run]:
                future.result()
    survived = summary(chosen, log)
    return 1 if any(mutant.key() not in equivalents.read() for mutant in survived) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
