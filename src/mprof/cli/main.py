"""Entry point of the mprof command line: parses arguments and dispatches.

Each subcommand lives in its own module exposing add_parser(subparsers) and
run(args) -> int.  To add one, name its module in _COMMANDS.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys

from ..reducer.errors import MprofError
from .arguments import bare_optional_values

# Each command's module, under the name it registers.  Only the module of
# the command named is imported: the reducer's and the reports' modules
# take several times longer to import than mprof run takes to start a
# program.  Help, and a command line that names none, load them all.
_COMMANDS = {"run": "run", "report": "report_cmd", "html": "html_cmd", "diff": "diff_cmd", "export": "export_cmd",
             "db": "db_cmd", "dump": "dump_cmd", "replay": "replay_cmd", "top": "top_cmd",
             "attach": "attach_cmd", "detach": "attach_cmd"}

# A dest no subcommand module would choose, so that their own set_defaults()
# calls cannot collide with the dispatch.
_HANDLER = "_mprof_handler"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of command alone."""
    parser = argparse.ArgumentParser(prog="mprof", description="A memory allocation profiler.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    added = set()
    for name, module_name in _COMMANDS.items():
        if (command is not None and name != command) or module_name in added:
            continue  # a module adds all its commands at once
        added.add(module_name)
        module = importlib.import_module(f"{__package__}.{module_name}")
        # add_parser() need not return its parser nor name it to us: whatever
        # names it registered are the new keys of choices.
        before = set(subparsers.choices)
        module.add_parser(subparsers)
        for registered in set(subparsers.choices) - before:
            subparsers.choices[registered].set_defaults(**{_HANDLER: module.run})
    return parser


def _command_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def main(argv: list[str]) -> int:
    # The main parser has no options but --help: a command line whose first
    # word is a command's name is that command's.
    command = argv[0] if argv and argv[0] in _COMMANDS else None
    parser = build_parser(command)
    try:
        if command is None:
            args = parser.parse_args(argv)
        else:
            # The command's own parser reports a word it does not know, with
            # its own usage, not the top level's.
            command_parser = _command_parsers(parser)[command]
            args, unknown = parser.parse_known_args([command, *bare_optional_values(command_parser, argv[1:])])
            if unknown:
                command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as e:
        # argparse exits on --help and on usage errors; return the code so
        # that main() stays callable from tests and other Python code (but
        # for mprof run, which ends the process as its program ended).
        return e.code if isinstance(e.code, int) else 2
    try:
        code: int = getattr(args, _HANDLER)(args)
    except MprofError as e:
        print(f"mprof: {e}", file=sys.stderr)
        return e.exit_code
    return code


def console() -> int:
    """The mprof command: main on the process's arguments, as the console
    script and the launchers run it."""
    # The reducer and the reports make hundreds of thousands of objects that
    # live until the command ends, and next to no reference cycles: with the
    # default young generation of 700 the collector scans them over and
    # over, a tenth of a big report's time.
    gc.set_threshold(100_000, 50, 100)
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
