"""What every test shares: an environment in which mprof asks no server."""

from __future__ import annotations

import os

# Debian's libdebuginfod-common sets DEBUGINFOD_URLS in login shells, and
# the resolver then asks that server for every module without debug
# information: a test run must not depend on the network.  The tests of
# debuginfod start a server of their own and name it.
os.environ.pop("DEBUGINFOD_URLS", None)
