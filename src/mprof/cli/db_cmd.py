"""mprof db: reduce data files into a profile database."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..reducer.errors import MprofError
from .arguments import add_selection_arguments
from .inputs import read_inputs, reduce_into, selected, selection
from .output import check_output


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "db", help="reduce data files into an SQLite profile database",
        description="Resolve the addresses in one or more data files (a process and its children, or "
                    "repeated runs) and write the reduced profile to an SQLite database.")
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="mprof data files")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="PROFILE.db",
                        help="the database to write (replaced if it exists)")
    add_selection_arguments(parser)


def run(args: argparse.Namespace) -> int:
    output = check_output(args.output)  # a wrong -o refused before the reduction
    with read_inputs(args.files) as inputs:
        if inputs.database:
            raise MprofError(f"{args.files[0]}: already a profile database")
        with output.building() as database:
            reduce_into(selected(inputs.files, selection(args)), database)
    return 0
