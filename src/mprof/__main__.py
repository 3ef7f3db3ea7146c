"""`python -m mprof`: the same command as the mprof launcher."""

import sys

from mprof.cli.entry import launch

sys.exit(launch())
