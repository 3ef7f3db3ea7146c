"""mprof export: a profile in another tool's format (pprof, collapsed
stacks)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..export import collapsed, pprof
from ..reducer.errors import MprofError
from ..report.display import for_display
from ..report.measures import DEFAULT_MEASURE, MEASURE_NAMES, by_name, measures
from ..report.model import Model, RunInfo
from . import pushing
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
    wanted = parser.add_mutually_exclusive_group(required=True)
    wanted.add_argument("--format", choices=("pprof", "collapsed"), help="what to write")
    wanted.add_argument("--push", metavar="URL",
                        help="send the profile to the Pyroscope server at URL instead (http[s]://[USER:PASSWORD@]"
                             "HOST:PORT): what the run allocated, and what was live at its end, as one profile")
    pushing.add_label_argument(parser)
    parser.add_argument("--sample", choices=MEASURE_NAMES, default=DEFAULT_MEASURE, metavar="TYPE",
                        help="the measure a collapsed file counts, or pprof's default sample type: "
                             f"{', '.join(MEASURE_NAMES)} (default: %(default)s)")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="the file to write (default: standard output, not a terminal for pprof)")
    add_naming_arguments(parser, "the reports' short names; pprof keeps each whole signature as its system name")
    add_selection_arguments(parser)
    add_leak_arguments(parser, fail=False, measures=True)


def run(args: argparse.Namespace) -> int:
    if args.push is not None:
        return _push(args)
    pushing.refuse_labels_without_push(args)
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
                return model.runs, pprof.profile(model, measures(args.include_runtime, args.leak_kinds), args.sample)
            return model.runs, collapsed.collapsed(model, by_name(args.sample, args.include_runtime, args.leak_kinds))
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


def _push(args: argparse.Namespace) -> int:
    """--push: the files' profile to the server, stamped with the runs'
    end; labelled with the program, its pid when there is one process, and
    the user's labels."""
    from ..push import interval, target

    if args.output is not None:
        raise MprofError("--push sends the profile: it writes no file (-o)", 2)
    try:
        to = target.target(args.push)
    except MprofError as error:  # a usage error, as mprof run's
        raise MprofError(error.message, 2) from None
    labels = pushing.checked_labels(args.label)

    def pushed(loaded: Model) -> tuple[list[RunInfo], bytes]:
        model = for_display(loaded, args.full_names)
        if not model.runs:
            raise MprofError(f"{args.files[0]}: holds no profile to export")
        return model.runs, interval.whole_run_profile(model)

    runs, data = made_of_profile(args.files, pushed, selection(args), leaks_and_calls=False)
    warn_of_partial_paths(runs, args.files[0])
    programs = sorted({run.program for run in runs})
    own = [("service_name", os.path.basename(programs[0])), ("program", programs[0])] if len(programs) == 1 else []
    if not own and "service_name" not in dict(labels):
        raise MprofError(f"{args.files[0]}: holds the runs of {len(programs)} programs: name their service with "
                         "--label service_name=NAME", 2)
    if len(runs) == 1:
        own.append(("pid", str(runs[0].pid)))
    target.send_now(to, [*own, *labels], data, timeout_s=30)
    return 0
