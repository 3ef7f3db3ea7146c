"""mprof dump: everything a data file holds, addresses unresolved (for
debugging the monitor and for scripts that want the raw figures)."""

from __future__ import annotations

import argparse
import json
import sys

from ..reducer import datafile
from ..report.json_report import datafile_to_json
from ..report.text_summary import datafile_to_text


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "dump",
        help="print a data file as it is, addresses unresolved",
        description="Print everything an mprof data file holds, without resolving addresses.",
    )
    parser.add_argument(
        "--format",
        choices=("json", "text"),
        default="text",
        help="output format (default: %(default)s)",
    )
    parser.add_argument("file", metavar="FILE", help="an mprof data file")


def run(args: argparse.Namespace) -> int:
    df = datafile.read(args.file)
    if args.format == "json":
        # ensure_ascii keeps undecodable path bytes (surrogates) writable on
        # any stdout, as \udcXX escapes that json.loads turns back.
        sys.stdout.write(json.dumps(datafile_to_json(df), indent=2) + "\n")
    else:
        sys.stdout.write(datafile_to_text(df))
    return 0
