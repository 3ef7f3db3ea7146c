"""mprof top: the live view of a process that runs under mprof."""

from __future__ import annotations

import argparse
import os
import sys

from ..reducer.errors import MprofError
from .arguments import seconds


def add_interval_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--interval", type=seconds(0.1, 3600), default=1.0, metavar="SECONDS",
                        help="how often the view asks for new figures (default 1)")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "top", help="watch the memory of a running process, live",
        description="Show, refreshed every second, the live bytes, resident set and peak of a process that runs "
                    "under mprof (mprof run, or libmprof linked in), and its top whole call paths by live bytes, "
                    "allocations per second, temporaries or growth since the view began. Keys l, a, t and g "
                    "choose the order; q leaves the view and the process running.")
    parser.add_argument("pid", type=int, metavar="PID", help="the process to watch")
    add_interval_argument(parser)


def check_terminal() -> None:
    """Refuses a process with no terminal to draw on: its standard input
    and output, or else its controlling terminal."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return
    try:
        os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC))
    except OSError:
        raise MprofError("the live view needs a terminal: standard input and output are not one, "
                         "and there is no controlling terminal") from None


def run(args: argparse.Namespace) -> int:
    from ..live.screen import Settings, run_view
    from ..live.watch import check_watchable, runs_monitor

    check_terminal()
    check_watchable(args.pid)
    if not runs_monitor(args.pid):
        raise MprofError(f"process {args.pid}: has no libmprof to answer; mprof attach {args.pid} profiles it from "
                         "now on, and mprof top watches it then")
    return run_view(Settings(args.pid, args.interval, leave_when_ended=False, repaint=False))
