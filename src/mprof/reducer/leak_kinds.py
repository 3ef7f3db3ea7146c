"""The leak kinds as the database and the reports name them: memcheck's
words, in mprof(5)'s LEAK order, and the kind of blocks not classified."""

from __future__ import annotations

from typing import Final

DEFINITE: Final = "definitely lost"
INDIRECT: Final = "indirectly lost"
POSSIBLE: Final = "possibly lost"
REACHABLE: Final = "still reachable"
KINDS: Final = (DEFINITE, INDIRECT, POSSIBLE, REACHABLE)
# Blocks of a run the monitor did not classify: never freed, no more known.
UNKNOWN: Final = "unknown"
# The names of memcheck's --show-leak-kinds and --errors-for-leak-kinds.
OPTION_NAMES: Final = {"definite": DEFINITE, "indirect": INDIRECT, "possible": POSSIBLE, "reachable": REACHABLE}
LOST: Final = (DEFINITE, INDIRECT)
