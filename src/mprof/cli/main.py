"""Entry point of the mprof command line: parses arguments and dispatches.

Each subcommand lives in its own module exposing add_parser(subparsers) and
run(args) -> int.  To add one, import it and append it to _COMMANDS.
"""

from __future__ import annotations

import argparse
import os
import sys
from types import ModuleType

from ..reducer.errors import MprofError
from ..reducer.escape import printable
from . import db_cmd, diff_cmd, dump_cmd, export_cmd, html_cmd, replay_cmd, report_cmd
from . import run as run_cmd

_COMMANDS: tuple[ModuleType, ...] = (run_cmd, report_cmd, html_cmd, diff_cmd, export_cmd, db_cmd, dump_cmd, replay_cmd)

# A dest no subcommand module would choose, so that their own set_defaults()
# calls cannot collide with the dispatch.
_HANDLER = "_mprof_handler"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mprof", description="A memory allocation profiler.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in _COMMANDS:
        # add_parser() need not return its parser nor name it to us: whatever
        # names it registered are the new keys of choices.
        before = set(subparsers.choices)
        command.add_parser(subparsers)
        for name in set(subparsers.choices) - before:
            subparsers.choices[name].set_defaults(**{_HANDLER: command.run})
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        # argparse exits on --help and on usage errors; return the code so
        # that main() stays callable from tests and other Python code.
        return e.code if isinstance(e.code, int) else 2
    try:
        code: int = getattr(args, _HANDLER)(args)
    except MprofError as e:
        # One line, whatever bytes the paths in it hold.
        print(f"mprof: {printable(str(e))}", file=sys.stderr)
        return e.exit_code
    return code


def console() -> int:
    """The mprof command: main on the process's arguments, as the console
    script and the launchers run it."""
    try:
        return main(sys.argv[1:])
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (mprof report | head).  Point stdout at
        # /dev/null so that the interpreter's final flush does not complain.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
