"""mprof report: the mprof tables of a profile."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..report import json_tables, text_tables
from ..report.display import for_display
from .inputs import load_profile


def _tables(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in text_tables.TABLES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(text_tables.TABLES)}")
    return names


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError("between 0 and 100")
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
                        help=f"tables to print, comma-separated (default: {','.join(text_tables.TABLES)})")
    parser.add_argument("--cutoff", type=_percent, default=0.0, metavar="PERCENT",
                        help="leave out entries below this percentage of the total (default: 0)")
    parser.add_argument("--call-sites", action="store_true",
                        help="leak paths name the line of each call, telling call sites in one function apart")
    parser.add_argument("--wide", action="store_true", help="never shorten leak paths")


def run(args: argparse.Namespace) -> int:
    model = for_display(load_profile(args.files))
    options = text_tables.Options(tables=args.tables, cutoff=args.cutoff, call_sites=args.call_sites,
                                  wide=args.wide)
    if args.format == "json":
        sys.stdout.write(json.dumps(json_tables.tables(model, options), indent=1) + "\n")
    else:
        sys.stdout.write(text_tables.render(model, options))
    return 0
