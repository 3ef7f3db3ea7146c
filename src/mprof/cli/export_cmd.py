"""mprof export: a profile in another tool's format (pprof, collapsed
stacks)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..export import collapsed, pprof
from ..reducer.errors import MprofError
from ..report.display import for_display
from ..report.measures import DEFAULT_MEASURE, MEASURE_NAMES, by_name, measures
from ..report.model import Model, RunInfo
from .arguments import add_leak_arguments, add_naming_arguments, add_selection_arguments
from .inputs import made_of_profile, selection, suppressed, warn_of_partial_paths
from .output import check_output


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "export", help="write a profile for pprof or a flame graph tool",
        description="Write a profile's whole call paths for other tools: --format pprof, a gzipped "
                    "profile.proto that pprof (go tool pprof, its web UI, continuous-profiling servers) "
                    "opens, with a sample type for each measure; --format collapsed, one measure as collapsed "
                    "stacks for flamegraph.pl, inferno or speedscope.")
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="data files of one program, or one profile database")
    parser.add_argument("--format", choices=("pprof", "collapsed"), required=True, help="what to write")
    parser.add_argument("--sample", choices=MEASURE_NAMES, default=DEFAULT_MEASURE, metavar="TYPE",
                        help="the measure a collapsed file counts, or pprof's default sample type: "
                             f"{', '.join(MEASURE_NAMES)} (default: %(default)s)")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="the file to write (default: standard output, not a terminal for pprof)")
    add_naming_arguments(parser, "the reports' short names; pprof keeps each whole signature as its system name")
    add_selection_arguments(parser)
    add_leak_arguments(parser, fail=False)


def run(args: argparse.Namespace) -> int:
    output = None if args.output is None else check_output(args.output)  # a wrong -o refused before the work
    if args.format == "pprof" and output is None and sys.stdout.isatty():
        raise MprofError("a pprof profile is binary: name a file with -o, or redirect the output")

    def exported(loaded: Model) -> tuple[list[RunInfo], bytes | str]:
        """The runs, and the export, or why its figures cannot be written."""
        model = for_display(suppressed(loaded, args), args.full_names)
        if not model.runs:
            raise MprofError(f"{args.files[0]}: holds no profile to export")
        try:
            if args.format == "pprof":
                return model.runs, pprof.profile(model, measures(args.include_runtime), args.sample)
            return model.runs, collapsed.collapsed(model, by_name(args.sample, args.include_runtime))
        except OverflowError as error:  # a path's figures or a stack's sum, of absurd files
            return model.runs, str(error)

    runs, data = made_of_profile(args.files, exported, selection(args), leaks_and_calls=False)  # an export of paths
    warn_of_partial_paths(runs, args.files[0])
    if isinstance(data, str):
        raise MprofError(f"{', '.join(map(str, args.files))}: {data}")
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        output.write(data)
    return 0
