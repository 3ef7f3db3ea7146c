"""Fixtures the unit tests share."""

from __future__ import annotations

import pytest

from mprof.report import validate


@pytest.fixture
def fresh_validation() -> None:
    """Validation reads schema.sql and each file's shape afresh: validate
    keeps both (schema(), _checks(), _SHAPES) for the life of the process,
    so that without this only the first test to check a database would run
    the code that finds them (a mutation test forks each mutant's tests
    from a process that has run them all once)."""
    validate.schema.cache_clear()
    validate._checks.cache_clear()
    validate._SHAPES.clear()
