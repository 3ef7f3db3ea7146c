"""A mutation fuzzer for the reader of LeakSanitizer suppressions files
(mprof report --suppressions): a file made of the names of a real profile
(its functions, modules and source files, whole, in pieces, with `*`, `^`
and `$`), with comments, blank lines and other kinds, then mutated: bits
flipped, bytes inserted (NUL, CR, invalid UTF-8, escape sequences, a
backslash), lines deleted, joined or repeated a thousand times, a line or
the file made just shorter or longer than the reader's bounds (mprof(1)),
kinds and patterns changed, the file replaced by random bytes.  Every input
must be read, or refused in one line naming the file: never a traceback, a
hang or memory past a bound.

    python3 tests/fuzz/fuzz_suppressions.py [--inputs N | --seconds S [--least N]] [--seed S] [--command-every K]
                                            PROFILE.db

Each input goes through the reader (mprof.report.suppressions.read) and,
where it is read, through one report: the profile (loaded once) less what
the suppressions take, its summary and leak table as mprof report prints
them.  Every Kth input
(--command-every, default 4) also goes through the command, `mprof report
--suppressions FILE PROFILE.db`, text and JSON in turn, which must agree
with the reader: a report where the reader read the file, the reader's
message where it refused it.  (The command loads the database again each
time, most of its 5 ms.)  The runs
happen under an address-space limit, each under an alarm; the worker's peak
resident set (ru_maxrss) is read after each input, and past MAX_RSS fails
the run, naming the input.  The run tries --inputs inputs (else the
environment's MPROF_FUZZ_INPUTS), or without a count inputs for --seconds
(else MPROF_FUZZ_SECONDS, else a minute), and at least --least of them
(harness.Budget).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness import Budget, add_budget_arguments, attempt, budget, flip, in_process, peak_rss, start_alarms

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "src"))

from mprof.cli.inputs import load_profile  # noqa: E402
from mprof.cli.main import main as mprof_main  # noqa: E402
from mprof.reducer.errors import MprofError  # noqa: E402
from mprof.report import suppressions, text_tables  # noqa: E402
from mprof.report.display import for_display  # noqa: E402
from mprof.report.model import Model  # noqa: E402

MEMORY_LIMIT = 2 << 30
MAX_RSS = 200 << 20
# What became of an input (attempt's status).
READ, REFUSED, TOOK = 0, 1, 2  # TOOK: read, and its suppressions took blocks
SECONDS_PER_RUN = 10
ODD = [b"\0", b"\r", b"\r\n", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x80\xa8", b"\x1b[31m", b"\\", b"\t", b":",
       b"*", b"^", b"$", b"#", b"\x85", b"\x0e"]


def names(model: Model) -> list[str]:
    """The profile's functions, modules and source files."""
    found = set()
    for function in model.functions.values():
        found.update(part for part in (function.name, function.module, os.path.basename(function.module),
                                       function.file) if part)
    return sorted(found)


def seed_text(known: list[str], generator: random.Random) -> bytes:
    lines = ["# suppressions for the fuzzer", ""]
    for name in generator.sample(known, min(len(known), generator.randint(1, 12))):
        shape = generator.randrange(6)
        if shape == 1:
            name = "^" + name
        elif shape == 2:
            name = name + "$"
        elif shape == 3 and len(name) > 2:
            cut = generator.randrange(1, len(name) - 1)
            name = name[:cut] + "*" + name[cut + 1:]
        elif shape == 4:
            name = "*" + name[len(name) // 2:]
        lines.append(generator.choice(["leak", "leak", "leak", "race", "called_lib", " leak "]) + ":" + name)
        if generator.random() < 0.2:
            lines.append(generator.choice(["", "   ", "# " + name]))
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")


def insert(data: bytes, generator: random.Random) -> bytes:
    at = generator.randrange(len(data) + 1)
    piece = generator.choice(ODD) if generator.random() < 0.6 else bytes(
        generator.randrange(256) for _ in range(generator.randint(1, 16)))
    return data[:at] + piece + data[at:]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def delete_lines(data: bytes, generator: random.Random) -> bytes:
    lines = _lines(data)
    start = generator.randrange(len(lines))
    del lines[start:start + generator.randint(1, 3)]
    return b"\n".join(lines)


def join_lines(data: bytes, generator: random.Random) -> bytes:
    at = [i for i, byte in enumerate(data) if byte == 0x0A]
    if not at:
        return insert(data, generator)
    cut = generator.choice(at)
    return data[:cut] + generator.choice([b"", b" ", b":"]) + data[cut + 1:]


def repeat_line(data: bytes, generator: random.Random) -> bytes:
    """A line repeated, up to a thousand times: the file past the reader's
    bound at most twice over (the fuzzer's own memory counts too)."""
    lines = _lines(data)
    at = generator.randrange(len(lines))
    times = min(generator.choice([2, 10, 1000]), 2 * suppressions.MAX_FILE // (len(lines[at]) + 1) + 1)
    lines[at:at + 1] = [lines[at]] * times
    return b"\n".join(lines)


def near_line_bound(data: bytes, generator: random.Random) -> bytes:
    """A line of MAX_LINE bytes, one less or more, before its newline or at
    the end of the file."""
    length = suppressions.MAX_LINE + generator.choice([-1, 0, 1, 2])
    line = (b"leak:" + b"a" * length)[:length]
    ending = generator.choice([b"\n", b"\r\n", b""])
    return (data + line + ending) if ending == b"" else (line + ending + data)


def near_file_bound(data: bytes, generator: random.Random) -> bytes:
    """The file made MAX_FILE bytes long, one less or one more, of long
    comments (a few hundred lines, cheap to read) or, less often, of its own
    lines repeated."""
    length = suppressions.MAX_FILE + generator.choice([-1, 0, 1])
    own = data.endswith(b"\n") and generator.random() < 0.2
    filler = data if own else b"# " + b"filler " * 600 + b"\n"
    repeated = filler * (length // len(filler) + 1)
    return repeated[:length]


def kind(data: bytes, generator: random.Random) -> bytes:
    lines = _lines(data)
    at = generator.randrange(len(lines))
    line = lines[at]
    rest = line.partition(b":")[2] if b":" in line else line
    lines[at] = generator.choice([b"Leak", b"leak ", b" leak", b"", b"leak:leak", b"LEAK", b"race", b"leak"]) + \
        generator.choice([b":", b"", b"::", b": "]) + rest
    return b"\n".join(lines)


def pattern(data: bytes, generator: random.Random) -> bytes:
    """A pattern of anchors and wildcards, with pieces of the file between."""
    pieces = [b"*", b"^", b"$", b"**", b"^$", b"*$", b"^*", b""]
    words = [word for word in data.replace(b":", b" ").split() if len(word) < 200] or [b"main"]
    built = b"".join(generator.choice(pieces) + generator.choice(words)[:generator.randint(0, 12)]
                     for _ in range(generator.randint(1, 6))) + generator.choice(pieces)
    return data + b"leak:" + built + b"\n"


def binary(data: bytes, generator: random.Random) -> bytes:
    return bytes(generator.randrange(256) for _ in range(generator.randint(0, 512)))


def crlf(data: bytes, generator: random.Random) -> bytes:
    return data.replace(b"\n", generator.choice([b"\r\n", b"\r", b"\n\n"]))


MUTATIONS: tuple[Callable[[bytes, random.Random], bytes], ...] = (
    flip, insert, insert, delete_lines, join_lines, repeat_line, near_line_bound, near_file_bound, kind, kind,
    pattern, pattern, pattern, binary, crlf)


@dataclass
class Results:
    read: int = 0
    refused: int = 0
    commands: Counter[str] = field(default_factory=Counter)  # mprof report's runs: "text", "json"
    suppressing: int = 0  # inputs read whose suppressions took something
    failures: list[str] = field(default_factory=list)
    inputs: int = 0


def check(path: Path, model: Model, database: Path, command: str | None) -> tuple[bool, bool, str | None]:
    """Whether the reader read the file, whether its suppressions took
    anything from the profile, and what is wrong, if anything; command:
    "text" or "json" to run mprof report on it too."""
    try:
        rules = suppressions.read([path])
        message = None
    except MprofError as error:
        rules, message = [], str(error)
        if "\n" in message or not message.startswith(f"{path}"):
            return False, False, f"the reader refused it without one line naming the file: {message[:300]!r}"
    took = False
    if message is None:
        less = suppressions.suppress(model, rules)
        # The tables the suppressions change: the never-freed blocks.
        if not text_tables.render(for_display(less, False), text_tables.Options(tables=("summary", "leaks"))):
            return True, False, "an empty report"
        took = bool(less.suppressed)
    if command is None:
        return message is None, took, None
    arguments = ["report", "--no-pager", "--format", command, "--suppressions", str(path), str(database)]
    code, stdout, stderr = in_process(mprof_main, arguments)
    if message is not None:
        if code == 0 or stderr != f"mprof: {message}\n":
            return False, False, f"the reader said {message[:200]!r}, the report exit {code}, {stderr[:200]!r}"
        return False, False, None
    if code != 0 or any(not line.startswith("mprof: warning") for line in stderr.splitlines()) or not stdout:
        return True, took, f"read, but the report gave exit {code}, {stderr[:300]!r}"
    if command == "json" and bool(json.loads(stdout).get("suppressed")) != took:
        return True, took, "the command's report and the reader's disagree on what the suppressions took"
    return True, took, None


def outcome(path: Path, model: Model, database: Path, command: str | None) -> tuple[int, str | None]:
    """check's verdict as READ, REFUSED or TOOK, and the problem."""
    read, took, problem = check(path, model, database, command)
    return (TOOK if took else READ) if read else REFUSED, problem


def fuzz(database: Path, inputs: Budget, seed: int, command_every: int = 4) -> Results:
    # argparse looks for a translation of its words at each command's start,
    # in a dozen files, unless the language is C: mprof has no translation.
    os.environ["LANGUAGE"] = "C"
    generator = random.Random(seed)
    model = load_profile([database])
    known = names(model)
    results = Results()
    start_alarms()
    over = False
    with tempfile.TemporaryDirectory(prefix="mprof-fuzz-supp-") as directory:
        path = Path(directory) / "input.supp"
        for number in inputs.numbers(results.failures):
            results.inputs += 1
            data = seed_text(known, generator)
            applied = []
            for _ in range(generator.choice([1, 1, 1, 2, 3])):
                mutation = generator.choice(MUTATIONS)
                applied.append(mutation.__name__)
                data = mutation(data, generator)
            path.write_bytes(data)
            command = None
            if number % command_every == 0:
                command = "json" if number // command_every % 2 else "text"
                results.commands[command] += 1
            code, problem = attempt(functools.partial(outcome, path, model, database, command), SECONDS_PER_RUN)
            resident = peak_rss(resource.RUSAGE_SELF)
            if not problem and not over and resident > MAX_RSS:
                over = True
                problem = f"peak resident set {resident:,} bytes, past {MAX_RSS:,}"
            if problem:
                kept = Path(directory).parent / f"mprof-fuzz-supp-failure-{seed}-{number}.supp"
                kept.write_bytes(data)
                results.failures.append(f"input {number} ({'+'.join(applied)}, kept as {kept}): {problem}")
            elif code == REFUSED:
                results.refused += 1
            else:
                results.read += 1
                results.suppressing += code == TOOK
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("database", type=Path, help="a real profile database, whose names the seeds are made of")
    add_budget_arguments(parser)
    parser.add_argument("--seed", type=int, default=1988, help="random seed, for a run that can be repeated")
    parser.add_argument("--command-every", type=int, default=4, metavar="K",
                        help="every Kth input also goes through mprof report (default %(default)s)")
    args = parser.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    started = time.monotonic()
    results = fuzz(args.database, budget(args), args.seed, args.command_every)
    seconds = time.monotonic() - started
    print(f"reader: {results.inputs} inputs, {results.read} read, {results.refused} refused in one line")
    print(f"report: {results.read} reports, {results.suppressing} in which a suppression took blocks; "
          f"mprof report run on {results.commands['text']} inputs for text, {results.commands['json']} for JSON")
    print(f"{results.inputs} inputs in {seconds:.1f} s; peak resident set "
          f"{peak_rss(resource.RUSAGE_SELF) / (1 << 20):.1f} MB")
    for failure in results.failures:
        print(f"FAILED {failure}")
    print(f"{results.inputs - len(results.failures)} passed, {len(results.failures)} failed")
    return 1 if results.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
