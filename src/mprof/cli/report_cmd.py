"""mprof report: the mprof tables of a profile."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from ..reducer.errors import MprofError
from ..report import json_tables, text_tables
from ..report.display import for_display
from ..report.model import Model
from ..report.tables import EVERY_ROW, FIRST_SCREEN, Limit
from . import pager
from .arguments import add_leak_arguments, add_naming_arguments, add_selection_arguments
from .inputs import leak_verdict, made_of_profile, selection, suppressed


def _tables(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in text_tables.TABLES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(text_tables.TABLES)}")
    return names


def percent_argument(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError("between 0 and 100")
    return value


def count_argument(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("at least 1")
    return value


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "report", help="print the mprof tables",
        description="Print the memory leak, allocation bin, direct allocation and allocation call graph "
                    "tables and the program summary of a profile: data files (reduced on the fly) or a "
                    "database written by mprof db.")
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="data files of one program, or one profile database")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="output format (default: %(default)s)")
    parser.add_argument("--tables", type=_tables, default=text_tables.TABLES, metavar="LIST",
                        help=f"text tables to print, comma-separated (default: {','.join(text_tables.TABLES)}); "
                             "JSON holds every table and row")
    parser.add_argument("--cutoff", type=percent_argument, default=None, metavar="PERCENT",
                        help="leave out entries below this percentage of the total; without --top, show all "
                             "the others")
    rows = parser.add_mutually_exclusive_group()
    rows.add_argument("--top", type=count_argument, metavar="N",
                      help="show the first N rows of each text table (default: the rows that make up 90%% of "
                           "its total, at most 20)")
    rows.add_argument("--all", action="store_true", help="show every row of each text table")
    parser.add_argument("--call-sites", action="store_true",
                        help="leak paths name the line of each call, telling call sites in one function apart")
    parser.add_argument("--wide", action="store_true", help="never shorten leak paths")
    add_selection_arguments(parser)
    add_naming_arguments(parser, "only where two functions would read the same")
    add_leak_arguments(parser, fail=True)
    parser.add_argument("--no-pager", action="store_true",
                        help="never page the output (it is paged only on a terminal: $MPROF_PAGER, then "
                             "$PAGER, then less)")


def limit(args: argparse.Namespace) -> Limit:
    """Rows chosen by share (--cutoff) or number (--top), or all; else the
    first screen's."""
    if args.top is not None:
        return Limit(rows=args.top)
    if args.all or args.cutoff is not None:
        return EVERY_ROW
    return FIRST_SCREEN


def run(args: argparse.Namespace) -> int:
    def reported(loaded: Model) -> tuple[str, int, str]:
        """The report, and leak_verdict's."""
        model = for_display(suppressed(loaded, args), args.full_names)
        if not model.runs and model.replays:
            raise MprofError(f"{args.files[0]}: holds replays alone (mprof replay --db), no profile to report: "
                             f"mprof html shows them, sqlite3 reads them")
        options = text_tables.Options(tables=args.tables, cutoff=args.cutoff or 0.0, call_sites=args.call_sites,
                                      wide=args.wide, limit=limit(args), runtime=args.include_runtime,
                                      leak_kinds=args.leak_kinds,
                                      screen_width=shutil.get_terminal_size((text_tables.SCREEN_WIDTH, 40)).columns)
        if args.format == "json":
            text = json.dumps(json_tables.tables(model, options), indent=1) + "\n"
        else:
            text = text_tables.render(model, options)
        return (text, *leak_verdict(model, args.fail_on_leak, args.fail_on_leak_kinds))

    text, status, why = made_of_profile(args.files, reported, selection(args))
    # A failing CI job's log shows the leaks: no pager to wait on.
    pager.show(text, not args.no_pager and not status)
    if why:
        print(f"mprof: {why}", file=sys.stderr)
    return status
