"""mprof run: start a program with the monitor preloaded, wait for it, say
which data files the run wrote, and end as the program ended.

The program is a child of this process, in its process group and with its
terminal: the monitor itself prints nothing into the program's output, so
the listing comes from here, after the program is gone.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from .. import source_tree
from ..reducer.errors import MprofError
from ..report import text_tables
from ..report.display import for_display
from . import run_record
from .inputs import add_leak_arguments, leak_verdict, load_profile, suppressed


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
    parser.add_argument(
        "--trace", action="store_true",
        help="also write each process's allocation events in order to FILE.trace, for mprof replay",
    )
    parser.add_argument("--quiet", action="store_true",
                        help="do not list the files written (a process that left none is still named)")
    parser.add_argument("--verbose", action="store_true",
                        help="the monitor says on the program's stderr each file it writes, for debugging")
    add_leak_arguments(parser, fail=True)
    parser.add_argument("program", metavar="PROGRAM", help="the program to profile")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, metavar="ARGS", help="its arguments")


def library_path() -> Path:
    configured = os.environ.get("MPROF_LIBRARY")
    library = Path(configured) if configured else source_tree.BUILD / "libmprof.so"
    if not library.is_file():
        raise MprofError(f"{library}: monitor library not found (run make first)")
    return library


def _given_lc_ctype() -> tuple[bool, str | None]:
    """LC_CTYPE as this process was given it (None: unset), read from the
    environment the kernel kept from exec, which setenv() never changes;
    (False, None) when that cannot be read."""
    try:
        with open("/proc/self/environ", "rb") as given:
            entries = given.read().split(b"\0")
    except OSError:
        return False, None
    for entry in entries:
        if entry.startswith(b"LC_CTYPE="):
            return True, os.fsdecode(entry[len(b"LC_CTYPE="):])
    return True, None


def monitor_environment(args: argparse.Namespace, library: Path, run_directory: Path) -> dict[str, str]:
    environment = dict(os.environ)
    # The program gets the environment mprof was given, not the LC_CTYPE
    # Python sets for itself in a C locale (PEP 538).
    known, lc_ctype = _given_lc_ctype()
    if known:
        if lc_ctype is None:
            environment.pop("LC_CTYPE", None)
        else:
            environment["LC_CTYPE"] = lc_ctype
    preload = environment.get("LD_PRELOAD", "")
    environment["LD_PRELOAD"] = f"{library}:{preload}" if preload else str(library)
    # Absolute: a program that changes directory still writes here.
    output = os.path.abspath(args.output or "mprof.out.%p")
    settings = {
        "MPROF_OUTPUT": output,
        "MPROF_TRACE": f"{output}.trace" if args.trace else None,
        "MPROF_RUN_DIR": str(run_directory),
        "MPROF_DEPTH": args.depth,
        "MPROF_LEAK_DEPTH": args.leak_depth,
        "MPROF_CALL_GRAPH": "0" if args.no_call_graph else None,
        "MPROF_FOLLOW": "0" if args.no_follow else None,
        "MPROF_DUMP_SIGNAL": args.dump_signal,
        "MPROF_VERBOSE": "1" if args.verbose else None,
    }
    for name, value in settings.items():
        if value is not None:
            environment[name] = str(value)
    return environment


# Sent to mprof run, meant for the program.  Not SIGINT, SIGQUIT, SIGWINCH,
# SIGTSTP or SIGCONT: a terminal sends those to the whole process group, the
# program included, so mprof run ignores the first two while it waits, as
# system() does, and leaves the others to their default.
_FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM)
_WAIT_IGNORES = (signal.SIGINT, signal.SIGQUIT)


def _signal_number(name: str) -> int | None:
    """The dump signal as the monitor reads it (USR1, SIGUSR1, 10, ...)."""
    if name.isdigit():
        return int(name)
    name = name.upper()
    try:
        return int(signal.Signals[name if name.startswith("SIG") else f"SIG{name}"])
    except KeyError:
        return None  # the monitor warns about it


def _start(program: str, arguments: list[str], environment: dict[str, str], program_mask: set[int]) -> int:
    """Forks and executes the program with the signal mask program_mask;
    the child learns its own pid first, since it is the first process of
    the run."""
    # Python ignores SIGPIPE and SIGXFSZ for itself; an ignored signal would
    # stay ignored in the program.  SIGINT is Python's only if it was not
    # ignored when mprof started.
    restore = [signal.SIGPIPE, signal.SIGXFSZ]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        restore.append(signal.SIGINT)
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(ready_read)
            for number in restore:
                signal.signal(number, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, program_mask)
            environment["MPROF_ROOT_PID"] = str(os.getpid())
            # ready_write closes on exec (Python's descriptors are not
            # inheritable): the program never sees it.
            os.execvpe(program, [program, *arguments], environment)
        except OSError as error:
            os.write(ready_write, (error.strerror or str(error)).encode())
        finally:
            os._exit(127)
    os.close(ready_write)
    with os.fdopen(ready_read, "rb") as ready:
        failure = ready.read()  # empty when the exec closed the pipe
    if failure:
        os.waitpid(pid, 0)
        raise MprofError(f"{program}: cannot run: {failure.decode(errors='replace')}")
    return pid


def _wait(pid: int, forwarded: set[int], mask: set[int]) -> int:
    """Forwards the signals in forwarded to the program until it ends, then
    sets the signal mask to mask.  They have been blocked since before the
    fork and are taken with sigwaitinfo, with SIGCHLD, so that none sent
    while the program starts, or just before mprof waits, is lost (a Python
    handler can run too late: after waitpid has begun to block)."""
    # An ignored SIGCHLD, inherited, would have the kernel reap the program
    # unseen; the program itself was forked with it as it was.
    child_action = signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    try:
        while True:
            ended, status = os.waitpid(pid, os.WNOHANG)
            if ended:
                return status
            received = signal.sigwaitinfo(forwarded | {signal.SIGCHLD}).si_signo
            if received != signal.SIGCHLD:
                try:
                    os.kill(pid, received)
                except ProcessLookupError:
                    pass  # it has just ended: waitpid will say how
    finally:
        # A SIGINT or SIGQUIT from the terminal went to the program too:
        # ignoring it discards it, pending, before mprof's mask returns.
        previous = {number: signal.signal(number, signal.SIG_IGN) for number in _WAIT_IGNORES
                    if number not in forwarded}
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for number, handler in previous.items():
            signal.signal(number, handler)
        signal.signal(signal.SIGCHLD, child_action)


# A build run under mprof can write thousands of files: the first are named.
_LISTED = 20


def _list(what: str, lines: list[str]) -> None:
    print(f"mprof: the run wrote {len(lines)} {what}{'s' if len(lines) != 1 else ''}:", file=sys.stderr)
    for line in lines[:_LISTED]:
        print(f"  {line}", file=sys.stderr)
    if len(lines) > _LISTED:
        print(f"  and {len(lines) - _LISTED} more", file=sys.stderr)


def _report(run_directory: Path, quiet: bool) -> run_record.Written:
    written = run_record.report_lines(run_record.read(run_directory))
    if not quiet:
        if written.data_files:
            _list("data file", written.data_files)
        else:
            print("mprof: the run wrote no data file", file=sys.stderr)
        if written.traces:
            _list("trace", written.traces)
    for line in written.warnings:
        print(f"mprof: warning: {line}", file=sys.stderr)
    return written


def _leak_check(args: argparse.Namespace, paths: list[str]) -> int:
    """--fail-on-leak: the leak table of the run's files on stderr, as
    LeakSanitizer prints its report, and LEAK_EXIT_STATUS when the leaks
    exceed the limit."""
    if not paths:
        return 0
    model = for_display(suppressed(load_profile([Path(path) for path in paths]), args), False)
    status, why = leak_verdict(model, args.fail_on_leak)
    if status:
        print(text_tables.leak_table(model, text_tables.Options(path_width=200)), file=sys.stderr)
        print(f"mprof: {why}", file=sys.stderr)
    return status


def _end_as(status: int) -> int:
    """The program's exit status, or its death by the same signal."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        # Its core, if any, is the program's; mprof's own would be noise.
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
        os.kill(os.getpid(), number)
        return 128 + number  # a signal that does not end a process: as a shell reports it
    return os.waitstatus_to_exitcode(status)


def run(args: argparse.Namespace) -> int:
    library = library_path()
    program = args.program
    if os.sep not in program and not shutil.which(program):
        raise MprofError(f"{program}: command not found")
    arguments = args.arguments
    if arguments[:1] == ["--"]:
        arguments = arguments[1:]
    run_directory = Path(tempfile.mkdtemp(prefix="mprof-run-"))
    try:
        forwarded: set[int] = set(_FORWARDED)
        if args.dump_signal and (number := _signal_number(args.dump_signal)) is not None:
            forwarded.add(number)
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, forwarded | set(_WAIT_IGNORES))
        try:
            pid = _start(program, arguments, monitor_environment(args, library, run_directory), mask)
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            raise
        status = _wait(pid, forwarded, mask)
        sys.stdout.flush()
        written = _report(run_directory, args.quiet)
    finally:
        shutil.rmtree(run_directory, ignore_errors=True)
    # A program that failed, or was killed, keeps its own status: the job
    # fails either way, and that status says more than a leak would.
    if args.fail_on_leak is not None and os.WIFEXITED(status) and os.waitstatus_to_exitcode(status) == 0:
        leaks = _leak_check(args, written.data_paths)
        if leaks:
            return leaks
    sys.stderr.flush()
    return _end_as(status)
