"""mprof replay: a trace replayed against real allocators, their figures
printed, and kept in a profile database or a page on request."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..reducer import store
from ..reducer.errors import MprofError
from ..reducer.symbolize import Progress
from ..replay import allocators, database, runner, text
from ..replay.figures import ORDERS, Comparison
from ..replay.json_out import as_json
from .output import Output, check_output


def _allocator_names(text: str) -> tuple[str, ...]:
    try:
        return allocators.names(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _at_least(least: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"at least {least}")
        return value
    return parse


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "replay", help="replay a trace against real allocators and compare them",
        description="Replay the allocation trace of a program (mprof run --trace) against glibc's malloc, "
                    "jemalloc, tcmalloc and mimalloc, each replay in its own process with the allocator "
                    "preloaded, and print each one's time, time per call, peak footprint, waste and heap "
                    "expansion, medians over repeated replays.  With --synthetic, Gloger's random workload "
                    "instead of a trace.")
    parser.add_argument("trace", nargs="?", type=Path, metavar="TRACE", help="a trace (mprof run --trace)")
    parser.add_argument("--synthetic", action="store_true",
                        help="replay Gloger's random workload instead of a trace: allocations, frees and "
                             "reallocations chosen at random, sizes uniform up to --max-size")
    parser.add_argument("--operations", type=_at_least(1), metavar="N",
                        help="the synthetic workload's operations (default: 5000000)")
    parser.add_argument("--seed", type=_at_least(0), metavar="S",
                        help="the synthetic workload's random seed (default: 1)")
    parser.add_argument("--max-size", type=_at_least(1), metavar="M",
                        help="the synthetic workload's largest block (default: 1000)")
    parser.add_argument("--allocators", type=_allocator_names, default=allocators.DEFAULT, metavar="LIST",
                        help=f"comma-separated, from {', '.join(allocators.KNOWN)} (default: all)")
    parser.add_argument("--repeat", type=_at_least(1), default=3, metavar="N",
                        help="replays of each allocator, whose medians are reported (default: %(default)s)")
    parser.add_argument("--order", choices=ORDERS, default="threads",
                        help="threads: each recorded thread replayed on a thread of its own; recorded: every "
                             "event on one thread in the recorded order (default: %(default)s)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="output format (default: %(default)s)")
    parser.add_argument("--db", type=Path, metavar="PROFILE.db",
                        help="add the figures to this profile database (made if it does not exist)")
    parser.add_argument("--html", type=Path, metavar="REPORT.html",
                        help="write a page of the comparison (the whole report, with --db of a profile)")


def _source(args: argparse.Namespace) -> runner.Source:
    synthetic = {"operations": args.operations, "seed": args.seed, "max_size": args.max_size}
    if args.synthetic:
        if args.trace is not None:
            raise MprofError(f"{args.trace}: a trace or --synthetic, not both")
        return runner.Source(None, **{name: value for name, value in synthetic.items() if value is not None})
    if args.trace is None:
        raise MprofError("replay what? name a trace (mprof run --trace writes one), or give --synthetic")
    given = [f"--{name.replace('_', '-')}" for name, value in synthetic.items() if value is not None]
    if given:
        raise MprofError(f"{', '.join(given)}: only with --synthetic")
    return runner.Source(args.trace)


def run(args: argparse.Namespace) -> int:
    source = _source(args)
    # Every library first: a missing one should not cost the minutes of the others' replays.
    chosen = [allocators.find(name) for name in args.allocators]
    # A wrong --db or --html is refused before the replays, not after.
    db = None if args.db is None else check_output(args.db)
    if db is not None and db.replaces:
        store.open_database(db.given).close()  # another application's file, or another version
    page = None if args.html is None else check_output(args.html)
    if page is not None:
        _jinja2()
    comparison = runner.compare(source, chosen, args.repeat, args.order, Progress(sys.stderr.isatty()))
    if db is not None:
        # A database goes to a device or FIFO whole, as one of replays alone.
        with db.building() as temporary:
            database.add(comparison, temporary, db.given if db.replaces else None)
    if page is not None:
        _write_page(comparison, db, page)
    if args.format == "json":
        json.dump(as_json(comparison), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(comparison))
    return 0


def render_text(comparison: Comparison) -> str:
    return text.render(comparison.source, comparison.order, comparison.repeat, comparison.workload,
                       [(allocator.name, allocator.median) for allocator in comparison.allocators])


def _jinja2() -> None:
    try:
        import jinja2  # noqa: F401
    except ImportError:
        raise MprofError("the HTML report needs the Jinja2 Python package: install python3-jinja2, or run "
                         "`make venv` for ./mprof") from None


def _write_page(comparison: Comparison, db: Output | None, page: Output) -> None:
    """The page is made from a database, as every page is: the profile's
    with the replay added, or one of this replay alone (as the database
    written through to a device or FIFO is)."""
    from ..report import html
    from ..report.display import for_display
    from .inputs import load_profile

    if db is not None and not db.through:
        page.write(html.render(for_display(load_profile([db.target]))))
        return
    with tempfile.TemporaryDirectory(prefix="mprof-") as directory:
        alone = Path(directory) / "replay.db"
        database.add(comparison, alone)
        page.write(html.render(for_display(load_profile([alone]))))
