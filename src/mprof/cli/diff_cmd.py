"""mprof diff: what changed between two profiles."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..diff import json_out, text
from ..diff.compare import compare
from ..reducer.errors import MprofError
from ..report.display import for_display
from ..report.measures import MEASURE_NAMES, measures
from ..report.model import Model
from . import pager
from .arguments import add_leak_arguments, add_naming_arguments
from .inputs import load_profiles, suppressed, warn_of_partial_paths
from .output import check_output
from .report_cmd import count_argument, percent_argument

# Rows of each view in the text without --top or --all.
TEXT_ROWS = 20


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "diff", help="compare two profiles",
        description="Compare a base profile with a new one, of the same program or of two builds of it: "
                    "the change per call path, function (its own allocations, and with its callees'), direct "
                    "allocation site and size bin, in bytes and blocks allocated, never freed, live at the "
                    "peak and temporary, largest change first.  Functions are matched by name and module, "
                    "not by address.")
    parser.add_argument("files", nargs="*", type=Path, metavar="FILE",
                        help="BASE NEW: a data file or a profile database each")
    parser.add_argument("--base", type=Path, action="append", default=[], metavar="FILE",
                        help="a data file of the base profile, or its database; repeatable, data files merged "
                             "as mprof report merges them")
    parser.add_argument("--new", type=Path, action="append", default=[], metavar="FILE",
                        help="the same for the new profile")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="output format (default: %(default)s)")
    parser.add_argument("--html", type=Path, metavar="FILE",
                        help="also write the comparison as a web page with differential flame graphs")
    parser.add_argument("--sort", choices=MEASURE_NAMES, default="alloc_space", metavar="MEASURE",
                        help=f"the measure whose change orders the rows: {', '.join(MEASURE_NAMES)} "
                             "(default: %(default)s)")
    parser.add_argument("--cutoff", type=percent_argument, default=0.0, metavar="PERCENT",
                        help="leave out rows whose change is less than this percentage of the larger total of "
                             "the sort measure (default: none)")
    rows = parser.add_mutually_exclusive_group()
    rows.add_argument("--top", type=count_argument, default=None, metavar="N",
                      help="show the first N rows of each text table (default 20; JSON has every row)")
    rows.add_argument("--all", action="store_true", help="show every changed row")
    parser.add_argument("--wide", action="store_true", help="never shorten call paths")
    add_naming_arguments(parser, "only where two functions would read the same")
    add_leak_arguments(parser, fail=False, measures=True)
    parser.add_argument("--no-pager", action="store_true", help="never page the output")


def _sides(args: argparse.Namespace) -> tuple[list[Path], list[Path]]:
    if args.base or args.new:
        if args.files or not (args.base and args.new):
            raise MprofError("name the profiles as BASE NEW, or each with --base and --new, not both ways")
        return args.base, args.new
    if len(args.files) != 2:
        raise MprofError("mprof diff compares two profiles: BASE NEW (several files each with --base, --new)")
    return [args.files[0]], [args.files[1]]


def _shown(model: Model, paths: list[Path], args: argparse.Namespace) -> Model:
    model = for_display(suppressed(model, args), args.full_names)
    if not model.runs:
        raise MprofError(f"{paths[0]}: holds no profile to compare")
    warn_of_partial_paths(model.runs, paths[0])
    return model


def run(args: argparse.Namespace) -> int:
    base_paths, new_paths = _sides(args)
    if args.html:
        # Here, not above: the page alone needs Jinja2, which ./mprof may lack.
        try:
            from ..diff import html
        except ImportError:
            raise MprofError("the HTML report needs the Jinja2 Python package: install python3-jinja2, or run "
                             "`make venv` for ./mprof") from None
    page = None if args.html is None else check_output(args.html)  # a wrong --html refused before the work
    base, new = load_profiles([base_paths, new_paths], leaks_and_calls=False)  # a comparison of paths
    base_model = _shown(base.result(), base_paths, args)
    comparison = compare(base_model, _shown(new.result(), new_paths, args),
                         measures(args.include_runtime, args.leak_kinds))
    top = None if args.all else args.top
    if page is not None:
        page.write(html.render(comparison, text.Options(args.sort, args.cutoff, top)))
    if args.format == "json":
        document = json_out.document(comparison, text.Options(args.sort, args.cutoff, top))
        pager.show(json.dumps(document, indent=1) + "\n", not args.no_pager)
    else:
        options = text.Options(args.sort, args.cutoff, None if args.all else args.top or TEXT_ROWS,
                               None if args.wide else text.PATH_WIDTH)
        pager.show(text.render(comparison, options), not args.no_pager)
    return 0
