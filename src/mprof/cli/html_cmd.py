"""mprof html: the report as one self-contained web page."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from ..reducer.errors import MprofError
from ..report.display import for_display
from .inputs import (
    add_leak_arguments,
    add_naming_arguments,
    add_selection_arguments,
    load_profile,
    selection,
    suppressed,
)


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
    model = for_display(suppressed(load_profile(args.files, selection(args)), args), args.full_names)
    write_atomically(args.output, html.render(model, args.include_runtime))
    return 0


def write_atomically(path: Path, text: str) -> None:
    """A temporary file beside path, renamed over it: a reader never sees
    half a page, and a failure leaves whatever was there before."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise MprofError(f"{path}: cannot write: {error.strerror}") from None
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", errors="surrogateescape") as file:
            file.write(text)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _umask() -> int:
    # mkstemp creates 0600; a report is meant to be shared like any file.
    mask = os.umask(0)
    os.umask(mask)
    return mask
