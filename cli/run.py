"""mprof run: start a program with the monitor preloaded.

The program replaces this process (exec), so it keeps mprof's pid, its exit
status and its signals are its own, and its first process writes the file
named with -o.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from ..reducer.errors import MprofError

# Where libmprof.so is looked for when MPROF_LIBRARY does not name it: the
# build directory of a source tree (an installed launcher sets MPROF_LIBRARY).
_SOURCE_TREE_LIBRARY = Path(__file__).resolve().parent.parent / "build" / "libmprof.so"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a program under the monitor",
        description="Run PROGRAM with libmprof preloaded; each process it starts writes a data file.",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE",
        help="data file of the first process; the others write FILE.PID "
        "(%%p in FILE stands for the pid; default: mprof.out.PID)",
    )
    parser.add_argument(
        "--depth", type=_positive, metavar="N",
        help="most return addresses recorded per allocation (default 128, at most 1024)",
    )
    parser.add_argument(
        "--leak-depth", type=_positive, metavar="N",
        help="callers kept in each leak chain (default 5, as in the paper)",
    )
    parser.add_argument(
        "--no-call-graph", action="store_true",
        help="the paper's mprof- mode: leaks, bins and direct sites only, much cheaper",
    )
    parser.add_argument(
        "--no-follow", action="store_true",
        help="profile only PROGRAM itself, not the processes it forks or executes",
    )
    parser.add_argument(
        "--dump-signal", metavar="SIGNAL",
        help="signal (USR1, USR2, a number, ...) that makes the program write its file at once",
    )
    parser.add_argument("--quiet", action="store_true", help="do not print the names of files written")
    parser.add_argument("program", metavar="PROGRAM", help="the program to profile")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, metavar="ARGS", help="its arguments")


def library_path() -> Path:
    configured = os.environ.get("MPROF_LIBRARY")
    library = Path(configured) if configured else _SOURCE_TREE_LIBRARY
    if not library.is_file():
        raise MprofError(f"{library}: monitor library not found (run make first)")
    return library


def monitor_environment(args: argparse.Namespace, library: Path) -> dict[str, str]:
    environment = dict(os.environ)
    # The program will have this process's pid, since it replaces it: it is
    # the first process of the run, and the environment the monitor sees is
    # the one the program sees.
    environment["MPROF_ROOT_PID"] = str(os.getpid())
    preload = environment.get("LD_PRELOAD", "")
    environment["LD_PRELOAD"] = f"{library}:{preload}" if preload else str(library)
    settings = {
        "MPROF_OUTPUT": args.output,
        "MPROF_DEPTH": args.depth,
        "MPROF_LEAK_DEPTH": args.leak_depth,
        "MPROF_CALL_GRAPH": "0" if args.no_call_graph else None,
        "MPROF_FOLLOW": "0" if args.no_follow else None,
        "MPROF_DUMP_SIGNAL": args.dump_signal,
        "MPROF_QUIET": "1" if args.quiet else None,
    }
    for name, value in settings.items():
        if value is not None:
            environment[name] = str(value)
    return environment


def run(args: argparse.Namespace) -> int:
    library = library_path()
    program = args.program
    if os.sep not in program and not shutil.which(program):
        raise MprofError(f"{program}: command not found")
    arguments = args.arguments
    if arguments[:1] == ["--"]:
        arguments = arguments[1:]
    environment = monitor_environment(args, library)
    try:
        os.execvpe(program, [program, *arguments], environment)
    except OSError as error:
        raise MprofError(f"{program}: cannot run: {error.strerror}") from None
    return 0  # not reached: exec replaced this process
