"""Real programs from Debian that allocate heavily, with inputs generated
deterministically, at a size chosen by a scale factor (1.0: a few seconds
without profiling; the valgrind comparison uses a small fraction)."""

from __future__ import annotations

import random
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Workload:
    name: str
    command: list[str]
    environment: dict[str, str] = field(default_factory=dict)
    stdin: Path | None = None
    # Allocates sizes that depend on where the heap is (Python's ints made
    # from object addresses are 28 bytes under valgrind's low heap, 32 under
    # glibc's): its byte totals differ between tools, its counts do not.
    address_dependent_sizes: bool = False
    # Tools run in the first round only, their medians of one run, and
    # whose failure is reported rather than ending the bench: heaptrack
    # 1.4's heaptrack_interpret grows to 19 GB on cc1plus and dies of
    # std::bad_alloc after 40 s, taking cc1plus with it (SIGPIPE).
    once: frozenset[str] = frozenset()


def _words(count: int, seed: int) -> list[str]:
    generator = random.Random(seed)
    vocabulary = ["".join(generator.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(generator.randint(2, 12)))
                  for _ in range(20000)]
    # Zipf-like: a few words are common, most are rare, as in text.
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    return generator.choices(vocabulary, weights, k=count)


def _text(path: Path, megabytes: float) -> Path:
    if not path.exists():
        words = _words(int(megabytes * 1024 * 1024 / 7), seed=1988)
        lines = (" ".join(words[i:i + 12]) for i in range(0, len(words), 12))
        path.write_text("\n".join(lines) + "\n")
    return path


def _sql(path: Path, rows: int) -> Path:
    if not path.exists():
        generator = random.Random(1988)
        statements = ["CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, tag TEXT);",
                      "BEGIN;"]
        for i in range(rows):
            name = "".join(generator.choice("abcdefghij") for _ in range(generator.randint(5, 30)))
            statements.append(f"INSERT INTO items VALUES ({i}, '{name}', {generator.random() * 100:.2f}, "
                              f"'tag{generator.randint(0, 999)}');")
        statements += ["COMMIT;", "CREATE INDEX items_name ON items(name);",
                       "CREATE INDEX items_tag ON items(tag, price);",
                       "SELECT count(*), count(DISTINCT tag) FROM items;"]
        path.write_text("\n".join(statements) + "\n")
    return path


PERL_SCRIPT = r"""
my %h; my $n = shift;
for my $i (1 .. $n) { $h{"key$i"} = "value" x ($i % 17); }
my %g; for my $k (keys %h) { push @{$g{length $h{$k}}}, $k; }
print scalar(keys %h), " ", scalar(keys %g), "\n";
"""

PYTHON_SCRIPT = r"""
import sys
n = int(sys.argv[1])
d = {}
for i in range(n):
    d[f"key{i}"] = [i, str(i) * (i % 7), (i, i + 1)]
rows = [list(range(i % 50)) for i in range(n // 2)]
print(len(d), sum(len(r) for r in rows))
"""


def _script(path: Path, text: str) -> Path:
    # A file, not -e/-c: heaptrack's launcher cannot pass an argument with newlines.
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def workloads(directory: Path, scale: float) -> list[Workload]:
    """gawk, perl, python3 and sqlite3, each with its generated input in directory."""
    directory.mkdir(parents=True, exist_ok=True)
    perl_script = _script(directory / "hashes.pl", PERL_SCRIPT)
    python_script = _script(directory / "dicts.py", PYTHON_SCRIPT)
    text = _text(directory / f"words-{scale}.txt", 20 * scale)
    sql = _sql(directory / f"items-{scale}.sql", int(200000 * scale))
    python = shutil.which("python3", path="/usr/bin") or "python3"
    return [
        Workload("gawk", ["gawk", "{ for (i = 1; i <= NF; i++) count[$i]++ } END { print length(count) }",
                          str(text)]),
        Workload("perl", ["perl", str(perl_script), str(int(400000 * scale))],
                 {"PERL_HASH_SEED": "0", "PERL_PERTURB_KEYS": "0"}),
        Workload("python3", [python, str(python_script), str(int(600000 * scale))],
                 {"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0"}, address_dependent_sizes=True),
        Workload("sqlite3", ["sqlite3", ":memory:"], stdin=sql),
    ]


# A small file whose one include makes cc1plus work as on a real source
# file: <regex> pulls in most of the C++ library's templates (issue 31).
REGEX_SOURCE = """#include <regex>
#include <string>
int main() { std::regex r("a+b*"); std::string s = "aab"; return std::regex_match(s, r) ? 0 : 1; }
"""


def compile_workload(directory: Path) -> Workload:
    """Debian's g++ compiling a file that includes <regex> at -O2: cc1plus
    itself, with the arguments g++ would give it, so that every tool sees
    the one process that allocates (g++ only forks it, and as after it)."""
    directory.mkdir(parents=True, exist_ok=True)
    source = _script(directory / "regex.cc", REGEX_SOURCE)
    assembly = directory / "regex.s"
    driver = subprocess.run(["g++", "-O2", "-S", str(source), "-o", str(assembly), "-###"],
                            capture_output=True, text=True, check=True)
    commands = [shlex.split(line) for line in driver.stderr.splitlines() if line.startswith(" ")]
    [command] = [c for c in commands if Path(c[0]).name == "cc1plus"]
    return Workload("cc1plus", command, once=frozenset({"heaptrack"}))
