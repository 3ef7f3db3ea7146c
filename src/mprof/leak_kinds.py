"""The leak kinds as the database and the reports name them: memcheck's
words, in mprof(5)'s LEAK order, and the kind of blocks not classified.
mprof run imports it: nothing else of the standard library here."""

from __future__ import annotations

DEFINITE = "definitely lost"
INDIRECT = "indirectly lost"
POSSIBLE = "possibly lost"
REACHABLE = "still reachable"
KINDS = (DEFINITE, INDIRECT, POSSIBLE, REACHABLE)
# Blocks of a run the monitor did not classify: never freed, no more known.
UNKNOWN = "unknown"
# The names of memcheck's --show-leak-kinds and --errors-for-leak-kinds.
OPTION_NAMES = {"definite": DEFINITE, "indirect": INDIRECT, "possible": POSSIBLE, "reachable": REACHABLE}
LOST = (DEFINITE, INDIRECT)
ALL = (*KINDS, UNKNOWN)
# The leak table's order: what may be a leak first (the lost, and blocks
# never freed of runs not classified), then the possibly lost, then the rest.
TABLE_ORDER = {DEFINITE: 0, INDIRECT: 0, UNKNOWN: 0, POSSIBLE: 1, REACHABLE: 2}


def parse_option(text: str) -> frozenset[str]:
    """memcheck's --show-leak-kinds and --errors-for-leak-kinds value: a
    comma list of definite, indirect, possible, reachable, or all, or none;
    the kinds it names.  ValueError says what is wrong."""
    words = [word.strip() for word in text.split(",")]
    if words == ["all"]:
        return frozenset(KINDS)
    if words == ["none"]:
        return frozenset()
    unknown = [word for word in words if word not in OPTION_NAMES]
    if unknown:
        raise ValueError(f"not a leak kind: {unknown[0]!r} (definite, indirect, possible, reachable, all or none)")
    return frozenset(OPTION_NAMES[word] for word in words)
