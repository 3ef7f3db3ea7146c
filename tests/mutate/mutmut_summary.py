"""Sums up a mutmut run (make mutate): mutants made, killed and surviving
in the reducer, the reports, the push and the live view, and in the table
code and the database's validation (mprof.report.validate), and lists
every survivor that tests/mutate/equivalent.txt does not explain, table
code first.  Run from the tree's root after `mutmut run`; exits non-zero
when the table code has unexplained survivors (the rest are listed, to be
killed or explained in turn).

A mutant with no test (mutmut's "no tests") counts as surviving: no test
would notice it.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import equivalents

REPO_ROOT = Path(__file__).resolve().parents[2]
# The code that computes and prints the tables' rows.
TABLE_CODE = ("mprof.reducer.callgraph", "mprof.reducer.scc", "mprof.reducer.store", "mprof.reducer.profile",
              "mprof.report.model", "mprof.report.tables", "mprof.report.text_tables", "mprof.report.json_tables",
              "mprof.report.summary")
VALIDATION = "mprof.report.validate"
KILLED = {"killed", "timeout"}  # a timeout is a mutant the tests stopped on


def results() -> dict[str, str]:
    listed = subprocess.run([REPO_ROOT / ".venv" / "bin" / "mutmut", "results", "--all", "true"], cwd=REPO_ROOT,
                            capture_output=True, text=True, check=True).stdout
    return dict(line.strip().rsplit(": ", 1) for line in listed.splitlines() if ": " in line)


def module_of(mutant: str) -> str:
    return ".".join(mutant.split(".")[:3])


def line(label: str, statuses: Counter[str]) -> str:
    made = sum(statuses.values())
    killed = sum(statuses[s] for s in KILLED)
    # A run stopped part way leaves the rest unchecked: neither.
    unchecked = statuses["not checked"]
    survived = made - killed - unchecked
    return (f"{label:<22} {made:>5} made, {killed:>5} killed, {survived:>5} survive "
            f"({100 * survived / max(made - unchecked, 1):4.1f}%; {statuses['no tests']} with no test)"
            + (f", {unchecked} not run" if unchecked else ""))


def main() -> int:
    found = results()
    explained = equivalents.read()
    groups: dict[str, Counter[str]] = {"reducer": Counter(), "report": Counter(), "push": Counter(),
                                       "live": Counter(), "table code": Counter(), "validation": Counter()}
    for mutant, status in found.items():
        module = module_of(mutant)
        groups[module.split(".")[1]][status] += 1
        if module in TABLE_CODE:
            groups["table code"][status] += 1
        if module == VALIDATION:
            groups["validation"][status] += 1
    for label, statuses in groups.items():
        print(line(label, statuses))
    survivors = [m for m, s in found.items() if s not in KILLED and s != "not checked"]
    table_failed = False
    for label, in_table in (("table code", True), ("other code", False)):
        mine = sorted(m for m in survivors if (module_of(m) in TABLE_CODE) == in_table)
        unexplained = [m for m in mine if m not in explained]
        print(f"{label}: {len(mine) - len(unexplained)} survivors listed as equivalent in "
              f"tests/mutate/equivalent.txt, {len(unexplained)} unexplained")
        for mutant in unexplained:
            print(f"  unexplained: {mutant} ({found[mutant]})")
        table_failed = table_failed or (in_table and bool(unexplained))
    return 1 if table_failed else 0


if __name__ == "__main__":
    sys.exit(main())
