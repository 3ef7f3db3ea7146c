"""A mutation fuzzer for the readers of profile databases: random SQL edits
of copies of real databases, each run through `mprof report`, `html`,
`diff` (with the untouched database) and `export`.  Every input must give
a result, or one line naming the file and a non-zero exit: never a
traceback, a hang or memory past a bound.

    python3 tests/fuzz/fuzz_db.py [--inputs N | --seconds S [--least N]] [--seed S] [--full-every K] DATABASE...

The edits: a random column of a random row set to NULL, text, 1.5e300,
2^63 - 1, -1, 2^53, 2^53 + 1, 0, a random integer, invalid UTF-8 stored as TEXT
(CAST(x'ff' AS TEXT)) or a BLOB; a random row deleted; every row of a table
deleted; a row duplicated with a new id, where the table's keys allow it;
a table dropped; and the edits of the tree of path nodes a report walks
up: a node made its own parent, a node's ancestor made its child (a loop
of two or more parents), a row in the middle of path_nodes' or functions'
ids deleted (every one of them is named by another row).  One input in
four gets two to four of these edits, the others one.  An input of one
edit of the tree must be refused: accepted, a report walks a loop for
ever or reads a path that is not the program's.  Each seed is first
loosened as a tool that recreates its tables might leave it: its NOT
NULL constraints taken out of the schema (PRAGMA writable_schema), so
that a NULL can be planted anywhere; the loosened seed must itself give
a result from every command.

Each input goes first through `report`.  One it refuses goes through html,
diff and export as well, each of which must refuse it in one line too:
refusals are cheap, the validation says no in a few milliseconds.  One it
reports goes through all four commands only if it is the Kth such input
(--full-every, default 10: a fixed share of a tenth), else through report
alone: the page and the comparison of an input that passes cost
tens of milliseconds.  An even
input gets the text report and pprof, an odd one JSON and collapsed
stacks; diff compares the edited database, as the base, with the
untouched one.

The run tries --inputs inputs (else the environment's MPROF_FUZZ_INPUTS),
or without a count inputs for --seconds (else MPROF_FUZZ_SECONDS, else a
minute), and at least --least of them (harness.Budget).  The runs happen in one worker process under an address-space
limit, each under an alarm; the commands run in that process, not as
programs.  At the end the worker's peak resident set (ru_maxrss) is
reported, and more than MEMORY_BOUND fails the run.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness import Budget, add_budget_arguments, attempt, budget, in_process, peak_rss, start_alarms

REPO_ROOT = Path(__file__).resolve().parents[2]
ADDRESS_SPACE = 2 << 30  # bytes of address space for the worker
MEMORY_BOUND = 200 << 20  # bytes resident at most, at the worker's peak
SECONDS_PER_RUN = 20
COMMANDS = ("report", "html", "diff", "export")

# What a random column of a random row is set to, as SQL.
VALUES = ("NULL", "'text'", "1.5e300", str((1 << 63) - 1), "-1", str(1 << 53), str((1 << 53) + 1), "0",
          "CAST(x'ff' AS TEXT)", "x'00ff'")


@dataclass
class Seed:
    name: str
    untouched: Path  # the database as it was made
    loosened: bytes  # the same without NOT NULL constraints: what is edited
    tables: list[str]
    columns: dict[str, list[str]]
    rowids: dict[str, list[int]]  # of the tables that have rows


def loosen(path: Path) -> bytes:
    """The database at path with no NOT NULL constraint left in its schema."""
    with tempfile.TemporaryDirectory(prefix="mprof-fuzz-") as directory:
        copy = Path(directory) / "loose.db"
        copy.write_bytes(path.read_bytes())
        db = sqlite3.connect(copy)
        try:
            db.execute("PRAGMA writable_schema = ON")
            db.execute("UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE type = 'table'")
            db.commit()
        finally:
            db.close()
        return copy.read_bytes()


def read_seed(path: Path) -> Seed:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [name for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        columns = {table: [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')] for table in tables}
        rowids = {table: [rowid for (rowid,) in db.execute(f'SELECT rowid FROM "{table}"')] for table in tables}
    finally:
        db.close()
    return Seed(path.name, path, loosen(path), tables, columns,
                {table: found for table, found in rowids.items() if found})


def _filled_table(db: sqlite3.Connection, seed: Seed, generator: random.Random) -> tuple[str, int] | None:
    """A random table that has rows, and a random row of it: the seed's,
    since each edit starts from the seed."""
    if not seed.rowids:
        return None
    table = generator.choice(sorted(seed.rowids))
    return table, generator.choice(seed.rowids[table])


def set_value(db: sqlite3.Connection, seed: Seed, generator: random.Random) -> str | None:
    found = _filled_table(db, seed, generator)
    if found is None:
        return None
    table, rowid = found
    column = generator.choice(seed.columns[table])
    value = generator.choice((*VALUES, "random"))
    if value == "random":
        value = str(generator.choice((generator.randrange(-1000, 100_000), generator.getrandbits(64) - (1 << 63))))
    db.execute(f'UPDATE "{table}" SET "{column}" = {value} WHERE rowid = ?', (rowid,))
    return f"{table}.{column} = {value} in row {rowid}"


def delete_row(db: sqlite3.Connection, seed: Seed, generator: random.Random) -> str | None:
    found = _filled_table(db, seed, generator)
    if found is None:
        return None
    table, rowid = found
    db.execute(f'DELETE FROM "{table}" WHERE rowid = ?', (rowid,))
    return f"row {rowid} of {table} deleted"


def delete_all(db: sqlite3.Connection, seed: Seed, generator: random.Random) -> str | None:
    table = generator.choice(seed.tables)
    db.execute(f'DELETE FROM "{table}"')
    return f"every row of {table} deleted"


def duplicate_row(db: sqlite3.Connection, seed: Seed, generator: random.Random) -> str | None:
    """A copy of a row, with a new id if the table has one; refused by
    SQLite, and tried again, where a key forbids it."""
    found = _filled_table(db, seed, generator)
    if found is None:
        return None
    table, rowid = found
    columns = seed.columns[table]
    chosen = ", ".join(f'(SELECT MAX(id) + 1 FROM "{table}")' if column == "id" else f'"{column}"'
                       for column in columns)
    db.execute(f'INSERT INTO "{table}" SELECT {chosen} FROM "{table}" WHERE rowid = ?', (rowid,))
    return f"row {rowid} of {table} duplicated"


def self_parent(db: sqlite3.Connection, seed: Seed, generator: random.Random) -> str | None:
    if "path_nodes" not in seed.rowids:
        return None
    node = generator.choice(seed.rowids["path_nodes"])
    db.execute("UPDATE path_nodes SET parent_id = id WHERE id = ?", (node,))
    return f"path node {node} made its own parent"


def parent_loop(db: sqlite3.Connection, seed: Seed, generator: random.Random) -> str | None:
    """A random ancestor of a random node made the node's child: a loop of
    the node's parents back to itself, two nodes long or more."""
    if "path_nodes" not in seed.rowids:
        return None
    node = generator.choice(seed.rowids["path_nodes"])
    ancestors: list[int] = []
    parent = db.execute("SELECT parent_id FROM path_nodes WHERE id = ?", (node,)).fetchone()[0]
    while isinstance(parent, int) and len(ancestors) < 1000:
        ancestors.append(parent)
        parent = db.execute("SELECT parent_id FROM path_nodes WHERE id = ?", (parent,)).fetchone()
        parent = parent[0] if parent else None
    if not ancestors:
        return None  # an outermost frame
    ancestor = generator.choice(ancestors)
    db.execute("UPDATE path_nodes SET parent_id = ? WHERE id = ?", (node, ancestor))
    return f"path node {ancestor}, an ancestor of {node} by {ancestors.index(ancestor) + 1}, made its child"


def delete_middle(db: sqlite3.Connection, seed: Seed, generator: random.Random) -> str | None:
    """A row of path_nodes or functions deleted that is neither the first
    nor the last of its ids: the ids left are no longer every integer from
    the least to the greatest."""
    tables = [table for table in ("path_nodes", "functions") if len(seed.rowids.get(table, ())) >= 3]
    if not tables:
        return None
    table = generator.choice(tables)
    ids = sorted(seed.rowids[table])
    row = generator.choice(ids[1:-1])
    db.execute(f'DELETE FROM "{table}" WHERE id = ?', (row,))
    return f"row {row} of {table}, between {ids[0]} and {ids[-1]}, deleted"


def drop_table(db: sqlite3.Connection, seed: Seed, generator: random.Random) -> str | None:
    table = generator.choice(seed.tables)
    db.execute(f'DROP TABLE "{table}"')
    return f"table {table} dropped"


EditFunction = Callable[[sqlite3.Connection, Seed, random.Random], str | None]
# Each edit with its weight: most inputs get one value planted.
EDITS: tuple[tuple[EditFunction, int], ...] = (
    (set_value, 12), (delete_row, 4), (delete_all, 1), (duplicate_row, 3), (drop_table, 1), (self_parent, 1),
    (parent_loop, 1), (delete_middle, 1))
# The edits no database the reports read survives, alone.
REFUSED = frozenset({self_parent, parent_loop, delete_middle})


def edited(seed: Seed, path: Path, generator: random.Random) -> tuple[str, bool]:
    """Writes an edited copy of the seed at path: one edit, or for one input
    in four two to four of them; says what they were, and whether the input
    must be refused (one edit, of REFUSED)."""
    edits, weights = zip(*EDITS, strict=True)
    wanted = 1 if generator.random() < 0.75 else generator.randint(2, 4)
    path.write_bytes(seed.loosened)
    done: list[str] = []
    kinds: list[EditFunction] = []
    db = sqlite3.connect(path)
    try:
        # A copy thrown away after the run: no journal, no waiting on the disk.
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        for _ in range(100):
            if len(done) == wanted:
                break
            edit = generator.choices(edits, weights)[0]
            try:
                what = edit(db, seed, generator)
            except sqlite3.IntegrityError:
                what = None  # a key forbids it: another edit
            except sqlite3.OperationalError as error:
                # Text in an INTEGER PRIMARY KEY; a table an edit before dropped.
                if "datatype mismatch" not in str(error) and "no such table" not in str(error):
                    raise
                what = None
            if what is not None:
                done.append(what)
                kinds.append(edit)
        db.commit()
    finally:
        db.close()
    return f"{seed.name}: {'; '.join(done)}", len(kinds) == 1 and kinds[0] in REFUSED


@dataclass
class Results:
    runs: Counter[str] = field(default_factory=Counter)       # per command
    results: Counter[str] = field(default_factory=Counter)    # exit 0
    refusals: Counter[str] = field(default_factory=Counter)   # one line, non-zero
    failures: list[str] = field(default_factory=list)
    inputs_reported: int = 0
    inputs_refused: int = 0
    inputs: int = 0
    tree_inputs: int = 0  # of one edit of REFUSED


def arguments(command: str, path: Path, untouched: Path, scratch: Path, even: bool) -> list[str]:
    """A command's words: text and pprof for an even input, JSON and
    collapsed stacks for an odd one."""
    return {"report": ["report", "--no-pager", "--format", "text" if even else "json", str(path)],
            "html": ["html", str(path), "-o", str(scratch / "fuzz.html")],
            "diff": ["diff", "--no-pager", str(path), str(untouched)],
            "export": ["export", "--format", "pprof" if even else "collapsed", "-o", str(scratch / "fuzz.out"),
                       str(path)]}[command]


def judge(command: str, path: Path, code: int, stdout: str, stderr: str) -> str | None:
    """What is wrong with a run, or None."""
    lines = stderr.splitlines()
    if code == 0:
        if any(not line.startswith("mprof: warning: ") for line in lines):
            return f"exit 0 with stray output on stderr: {stderr[:200]!r}"
        if command in ("report", "diff") and not stdout:
            return "exit 0 without a result"
        return None
    if len(lines) != 1 or not lines[0].startswith(f"mprof: {path}: "):
        return f"exit {code} without one line naming the file: {stderr[-300:]!r}"
    return None


def attempt_command(main: Callable[[list[str]], int], command: str, argv: list[str],
                    path: Path) -> tuple[int, str | None]:
    """The exit status of one run and what is wrong with it, if anything."""
    def run() -> tuple[int, str | None]:
        code, stdout, stderr = in_process(main, argv)
        return code, judge(command, path, code, stdout, stderr)
    return attempt(run, SECONDS_PER_RUN)


def fuzz(seeds: list[Seed], inputs: Budget, seed: int, full_every: int) -> Results:
    sys.path.insert(0, str(REPO_ROOT / "src"))
    from mprof.cli.main import main

    # argparse looks for a translation of its words at each command's start,
    # in a dozen files, unless the language is C: mprof has no translation.
    os.environ["LANGUAGE"] = "C"
    generator = random.Random(seed)
    results = Results()
    start_alarms()
    with tempfile.TemporaryDirectory(prefix="mprof-fuzz-db-") as directory:
        scratch = Path(directory)
        path = scratch / "input.db"
        for each in seeds:  # the loosened seeds themselves give results
            path.write_bytes(each.loosened)
            for command in COMMANDS:
                words = arguments(command, path, each.untouched, scratch, True)
                code, problem = attempt_command(main, command, words, path)
                if problem or code:
                    results.failures.append(f"{command} on the loosened {each.name}: exit {code}, {problem}")
        for number in inputs.numbers(results.failures):
            results.inputs += 1
            chosen = generator.choice(seeds)
            edit, refused = edited(chosen, path, generator)
            results.tree_inputs += refused
            commands = ["report"]  # then the others, if report refuses it or it is the Kth it passes
            for command in commands:
                results.runs[command] += 1
                words = arguments(command, path, chosen.untouched, scratch, number % 2 == 0)
                code, problem = attempt_command(main, command, words, path)
                if not problem and refused and code == 0:
                    problem = "exit 0 for a tree of path nodes or functions no report can read"
                if problem:
                    kept = scratch.parent / f"mprof-fuzz-db-failure-{seed}-{number}.db"
                    kept.write_bytes(path.read_bytes())
                    results.failures.append(f"{command} on input {number} ({edit}; kept as {kept}): {problem}")
                elif code == 0:
                    results.results[command] += 1
                else:
                    results.refusals[command] += 1
                if command == "report":
                    if code == 0:
                        results.inputs_reported += 1
                    else:
                        results.inputs_refused += 1
                    if code != 0 or results.inputs_reported % full_every == 0:
                        commands += COMMANDS[1:]
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("databases", nargs="+", type=Path, help="real profile databases to edit")
    add_budget_arguments(parser)
    parser.add_argument("--seed", type=int, default=1988, help="random seed, for a run that can be repeated")
    parser.add_argument("--full-every", type=int, default=10, metavar="K",
                        help="every Kth input that passes goes through all four commands (default %(default)s)")
    args = parser.parse_args(argv)
    seeds = [read_seed(path) for path in args.databases]
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    start = time.monotonic()
    results = fuzz(seeds, budget(args), args.seed, args.full_every)
    seconds = time.monotonic() - start
    resident = peak_rss(resource.RUSAGE_SELF)
    for command in COMMANDS:
        print(f"{command}: {results.runs[command]} runs, {results.results[command]} results, "
              f"{results.refusals[command]} refused in one line")
    print(f"{results.inputs} inputs in {seconds:.1f} s: {results.inputs_reported} gave results, "
          f"{results.inputs_refused} were refused; peak resident {resident / (1 << 20):.1f} MB")
    print(f"{results.tree_inputs} inputs of one edit of the tree of path nodes or functions, each to be refused")
    if resident > MEMORY_BOUND:
        results.failures.append(f"the worker's peak resident set, {resident:,} bytes, is past {MEMORY_BOUND:,}")
    for failure in results.failures:
        print(f"FAILED {failure}")
    print(f"{sum(results.runs.values()) - len(results.failures)} passed, {len(results.failures)} failed")
    return 1 if results.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
