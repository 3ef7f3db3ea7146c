"""Mutation testing of the C monitor: applies one operator or boundary
mutation at a time to monitor/*.c in a scratch copy of the tree, rebuilds
libmprof, and runs the end-to-end tests that exercise the monitor's
figures.  A mutant the tests fail on is killed; one they pass survives and
is listed with its file, line and change, and with the reason when
tests/mutate/equivalent.txt lists it as equivalent (by the key
path:line:before->after; the exit status is non-zero when a survivor is not
listed there).

    python3 tests/mutate/mutate_monitor.py [--limit N] [--seed S] [--files record.c,...]
                                           [--keys monitor/arena.c:51:==->!=,...]

Mutations: < <= > >= == != swapped for their boundary or opposite,
&& and || for each other, binary + and - for each other, and a decimal
constant n for n + 1.  Comments, strings and preprocessor lines are left
alone.  A mutant that does not compile (-Werror catches many) is counted
apart and not run.  With --limit, that many mutants are drawn at random
(seeded, so a run can be repeated) from all there are.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import equivalents

REPO_ROOT = Path(__file__).resolve().parents[2]
# The tests that check the monitor's figures against programs of known
# behaviour; together about a minute.
TESTS = ["tests/e2e/test_boundaries.py", "tests/e2e/test_widgets.py", "tests/e2e/test_allocator_api.py",
         "tests/e2e/test_processes.py", "tests/e2e/test_format_agreement.py", "tests/e2e/test_endings.py",
         "tests/e2e/test_modules.py", "tests/e2e/test_run.py", "tests/e2e/test_unwinder.py",
         "tests/e2e/test_table_growth.py", "tests/e2e/test_peak.py", "tests/e2e/test_exact_paths.py"]
SECONDS_PER_MUTANT = 600

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


def run(command: list[str], tree: Path, timeout: float, show_failure: bool = False) -> int:
    try:
        completed = subprocess.run(command, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1
    if completed.returncode and show_failure:
        sys.stderr.write(completed.stdout.decode(errors="replace")[-3000:])
    return completed.returncode


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=0, help="mutants drawn at random (default: all)")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the draw")
    parser.add_argument("--files", default="", help="comma-separated files of monitor/ (default: all)")
    parser.add_argument("--keys", default="",
                        help="comma-separated mutants to run, as path:line:before->after (to retry survivors)")
    args = parser.parse_args(argv)
    sources = [REPO_ROOT / "monitor" / name for name in args.files.split(",")] if args.files else \
        sorted((REPO_ROOT / "monitor").glob("*.c"))
    everything = [mutant for source in sources for mutant in mutants_of(source)]
    if args.keys:
        wanted = set(args.keys.split(","))
        everything = [mutant for mutant in everything if mutant.key() in wanted]
        # A key names every mutant alike on its line (two + on one line).
        missing = wanted - {mutant.key() for mutant in everything}
        if missing:
            parser.error(f"no such mutant: {', '.join(sorted(missing))}")
    chosen = random.Random(args.seed).sample(everything, args.limit) if 0 < args.limit < len(everything) \
        else everything
    chosen.sort(key=lambda m: (m.path, m.offset))
    print(f"{len(everything)} mutants in {len(sources)} files; running {len(chosen)}", flush=True)

    python = REPO_ROOT / ".venv" / "bin" / "python"
    with tempfile.TemporaryDirectory(prefix="mprof-mutate-") as scratch:
        tree = Path(scratch) / "tree"
        # The tracked files and the venv's path; the build is the copy's own.
        files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True).stdout
        for name in filter(None, files.decode().split("\0")):
            target = tree / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, target, follow_symlinks=False)
        (tree / ".venv").symlink_to(REPO_ROOT / ".venv")
        shutil.copytree(REPO_ROOT / "build", tree / "build", symlinks=True)
        pytest = [str(python), "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *TESTS]
        if run(["make", "-s", "all"], tree, 600, True) or run(pytest, tree, SECONDS_PER_MUTANT, True):
            print("the unmutated tree does not pass its tests", file=sys.stderr)
            return 1
        killed, survived, uncompiled = [], [], []
        for number, mutant in enumerate(chosen, start=1):
            original = (tree / mutant.path).read_text()
            apply(tree, mutant, original)
            started = time.monotonic()
            try:
                if run(["make", "-s", "all"], tree, 600):
                    uncompiled.append(mutant)
                    verdict = "does not compile"
                elif run(pytest, tree, SECONDS_PER_MUTANT):
                    killed.append(mutant)
                    verdict = "killed"
                else:
                    survived.append(mutant)
                    verdict = "SURVIVED"
            finally:
                (tree / mutant.path).write_text(original)
            print(f"[{number}/{len(chosen)}] {mutant.describe()}: {verdict} ({time.monotonic() - started:.0f} s)",
                  flush=True)
        run(["make", "-s", "all"], tree, 600)
    ran = len(killed) + len(survived)
    print(f"monitor: {len(chosen)} mutants, {len(uncompiled)} do not compile; of {ran} run, {len(killed)} killed, "
          f"{len(survived)} survived ({100 * len(survived) / max(ran, 1):.0f}%)")
    explained = equivalents.read()
    for mutant in survived:
        reason = explained.get(mutant.key())
        print(f"  survived: {mutant.describe()}" + (f" (equivalent: {reason})" if reason else " (unexplained)"))
    return 1 if any(mutant.key() not in explained for mutant in survived) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
