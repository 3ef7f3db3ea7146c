"""The profile database's man page, man/mprof-profile.5, against the schema
the reducer writes, src/mprof/reducer/schema.sql.

Every table and view the schema creates has a subsection of the page's
TABLES section headed by its name, in which each column is a tagged
paragraph (.TP) whose tag is the column's name in bold: the columns there
must be exactly the table's, in the order SELECT * gives them (the page
says so).  The page heads no subsection with a table the schema does not
create, names no table.column that does not exist, states the schema's
application id and version, and each SQL statement of its EXAMPLES runs on
the schema.  The schema is read from SQLite itself, created in an
in-memory database and listed with sqlite_master and PRAGMA table_info,
so the test sees what SQLite made of schema.sql rather than what a pattern
makes of its text."""

from __future__ import annotations

import re
import shlex
import sqlite3
from pathlib import Path

import pytest

from mprof.reducer import store

MAN_PAGE = Path(__file__).resolve().parents[2] / "man" / "mprof-profile.5"


def schema_database() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.executescript(store.SCHEMA.read_text())
    return db


def schema_columns() -> dict[str, list[str]]:
    """Each table and view the schema creates, with its columns in order."""
    db = schema_database()
    try:
        names = [name for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name")]
        return {name: [row[1] for row in db.execute(f'PRAGMA table_info("{name}")')] for name in names}
    finally:
        db.close()


def unescaped(text: str) -> str:
    """The roff escapes the page uses, as the characters they print."""
    return text.replace("\\(aq", "'").replace("\\-", "-").replace("\\e", "\\")


def section(lines: list[str], macro: str, title: str) -> list[str]:
    """The lines under the first `macro title` heading (title matched on its
    first word), up to the next heading of the same kind."""
    start = next(n for n, line in enumerate(lines) if line.startswith(macro + " ") and
                 line.split()[1] == title)
    end = next((n for n in range(start + 1, len(lines)) if lines[n].startswith(macro + " ")), len(lines))
    return lines[start + 1:end]


def bold_words(request: str) -> list[str]:
    """The bold text of one font request: all of .B's words, the first,
    third... arguments of .BR and .BI (their fonts alternate, bold first)."""
    macro, _, arguments = request.partition(" ")
    words = shlex.split(unescaped(arguments))
    if macro == ".B":
        return words
    if macro in (".BR", ".BI"):
        return words[0::2]
    return []


def page_lines() -> list[str]:
    return MAN_PAGE.read_text().splitlines()


def documented_columns() -> dict[str, list[str]]:
    """Each TABLES subsection's heading (its first word) and the columns its
    tagged paragraphs name, in the page's order."""
    lines = section(page_lines(), ".SH", "TABLES")
    tables: dict[str, list[str]] = {}
    current: list[str] | None = None
    for n, line in enumerate(lines):
        if line.startswith(".SS "):
            current = tables.setdefault(line.split()[1], [])
        elif line == ".TP" and current is not None:
            current += bold_words(lines[n + 1])
    return tables


SCHEMA = schema_columns()


def test_the_schema_has_tables() -> None:
    # Guards the test itself: an empty reading of schema.sql would make the
    # comparisons below pass on an empty page.
    assert {"runs", "functions", "leaks", "function_bytes"} <= set(SCHEMA)


@pytest.mark.parametrize("table", sorted(SCHEMA))
def test_each_table_is_documented_with_its_columns(table: str) -> None:
    documented = documented_columns()
    assert table in documented, f"man/mprof-profile.5 has no '.SS {table}' under TABLES"
    assert documented[table] == SCHEMA[table]


def test_the_page_documents_no_other_table() -> None:
    assert sorted(documented_columns()) == sorted(SCHEMA)


def test_every_table_column_the_page_names_exists() -> None:
    # References such as modules.bias or runs.program, in bold anywhere on
    # the page: each must be a column of a table of the schema.
    named = [word.rstrip(",.;:") for line in page_lines() if line.startswith((".B ", ".BR ", ".BI "))
             for word in bold_words(line)]
    references = [word for word in named if re.fullmatch(r"[a-z_]+\.[a-z_]+", word)]
    assert references, "the page names no table.column at all: the pattern or the page changed"
    for reference in references:
        table, column = reference.split(".")
        assert column in SCHEMA.get(table, []), f"man/mprof-profile.5 names {reference}, which schema.sql lacks"


def test_the_page_states_the_application_id_and_version() -> None:
    db = schema_database()
    try:
        application_id = db.execute("PRAGMA application_id").fetchone()[0]
        user_version = db.execute("PRAGMA user_version").fetchone()[0]
    finally:
        db.close()
    lines = page_lines()
    assert f".B PRAGMA application_id = {application_id}" in lines
    assert f".B PRAGMA user_version = {user_version}" in lines


def example_statements() -> list[str]:
    """The SQL of the EXAMPLES section: each example block (.EX to .EE) that
    starts with SELECT or WITH; the shell commands are left out."""
    statements = []
    block: list[str] | None = None
    for line in section(page_lines(), ".SH", "EXAMPLES"):
        if line == ".EX":
            block = []
        elif line == ".EE" and block is not None:
            text = unescaped("\n".join(block))
            if text.lstrip().upper().startswith(("SELECT", "WITH")):
                statements.append(text)
            block = None
        elif block is not None:
            block.append(line)
    return statements


def test_the_examples_run_on_the_schema() -> None:
    statements = example_statements()
    assert "SELECT name, self_bytes FROM function_bytes\nORDER BY self_bytes DESC LIMIT 10;" in statements
    db = schema_database()
    try:
        for statement in statements:
            assert sqlite3.complete_statement(statement), statement
            db.execute(statement).fetchall()  # an unknown table or column raises
    finally:
        db.close()
