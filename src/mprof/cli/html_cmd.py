"""mprof html: the report as one self-contained web page."""

from __future__ import annotations

import argparse
import gc
from pathlib import Path

from ..reducer.errors import MprofError
from ..report.display import for_display
from .arguments import add_leak_arguments, add_naming_arguments, add_selection_arguments
from .inputs import load_profile, selection, suppressed
from .output import check_output


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "html", help="write the report as a web page",
        description="Write the program summary, flame graphs of the bytes allocated and never freed, the "
                    "allocation size chart and the four mprof tables (sortable, filterable, linked) as one "
                    "self-contained HTML page that needs no server and no network.")
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="data files of one program, or one profile database")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="FILE", help="the page to write")
    add_selection_arguments(parser)
    add_naming_arguments(parser, "they show on hover")
    add_leak_arguments(parser, fail=False)


def run(args: argparse.Namespace) -> int:
    try:
        from ..report import html
    except ImportError:
        raise MprofError("the HTML report needs the Jinja2 Python package: install python3-jinja2, or run "
                         "`make venv` for ./mprof") from None
    output = check_output(args.output)  # a wrong -o refused before the work
    model = for_display(suppressed(load_profile(args.files, selection(args)), args), args.full_names)
    # The page's rows are hundreds of thousands of containers, none of them
    # garbage of a cycle: collection passes over them and the model cost a
    # big page a tenth of a second.
    gc.disable()
    try:
        page = html.render(model, args.include_runtime, args.leak_kinds)
    except OverflowError as error:  # the flame graphs' sums, of absurd files
        raise MprofError(f"{', '.join(map(str, args.files))}: {error}") from None
    finally:
        gc.enable()
    output.write(page)
    return 0

