"""mprof run: start a program with the monitor preloaded, wait for it, say
which data files the run wrote, and end as the program ended: this process
ends there, by the program's signal or with its status, so run() returns
only the status of a failed leak check.

The program is a child of this process, in its process group and with its
terminal: the monitor itself prints nothing into the program's output, so
the listing comes from here, after the program is gone.
"""

from __future__ import annotations

import argparse
import errno
import os
import resource
import shutil
import signal
import stat
import sys
import time
from pathlib import Path

from .. import source_tree
from ..reducer.errors import MprofError
from . import pushing, run_record, run_settings
from .arguments import add_leak_arguments

# Not typing's: importing it, like tempfile or dataclasses, would add a
# tenth to the time mprof run takes to start a program.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

    from ..push.periodic import Image


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
        "--depth", metavar="N",
        help="most return addresses recorded per allocation (default 128, at most 1024)",
    )
    parser.add_argument(
        "--leak-depth", metavar="N",
        help="callers kept in each leak chain (default 5, as in the paper, at most 64)",
    )
    parser.add_argument(
        "--no-call-graph", action="store_true",
        help="the paper's mprof- mode: leaks, bins and direct sites only, much cheaper",
    )
    parser.add_argument(
        "--no-leak-check", action="store_true",
        help="do not classify the blocks live at each process's end (definitely lost, still reachable...): "
             "the leak table then lists every block never freed",
    )
    parser.add_argument(
        "--no-follow", action="store_true",
        help="profile only PROGRAM itself, not the processes it forks or executes",
    )
    parser.add_argument(
        "--dump-signal", metavar="SIGNAL",
        help="signal (USR1, USR2, HUP, PROF, WINCH, URG or a number) that makes the program write its file at once",
    )
    parser.add_argument(
        "--allocator-prefix", metavar="PREFIX",
        help="also count the blocks of a shared library's allocator whose entry points carry PREFIX "
        "(je_ for je_malloc, je_free...: jemalloc built with a prefix; tc_, mi_)",
    )
    parser.add_argument(
        "--trace", action="store_true",
        help="also write each process's allocation events in order to FILE.trace, for mprof replay",
    )
    parser.add_argument(
        "--live", action="store_true",
        help="show the live view (as mprof top) while the program runs; q leaves it, the program running",
    )
    pushing.add_push_arguments(parser, "the program")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="do not list the files written (a process that left none is still named)")
    parser.add_argument("--verbose", action="store_true",
                        help="the monitor says on the program's stderr each file it writes, for debugging")
    add_leak_arguments(parser, fail=True)
    parser.add_argument("program", metavar="PROGRAM", help="the program to profile")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, metavar="ARGS", help="its arguments")


def library_path() -> Path:
    return source_tree.built("MPROF_LIBRARY", "libmprof.so", "monitor library")


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


def _output(args: argparse.Namespace) -> str:
    # Absolute: a program that changes directory still writes here.
    return os.path.abspath(args.output or "mprof.out.%p")


def monitor_environment(args: argparse.Namespace, library: Path, run_directory: Path,
                        depths: tuple[int | None, int | None] = (None, None)) -> dict[str, str]:
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
    output = _output(args)
    settings = {
        "MPROF_OUTPUT": output,
        "MPROF_TRACE": f"{output}.trace" if args.trace else None,
        "MPROF_RUN_DIR": str(run_directory),
        "MPROF_DEPTH": depths[0],
        "MPROF_LEAK_DEPTH": depths[1],
        "MPROF_CALL_GRAPH": "0" if args.no_call_graph else None,
        "MPROF_FOLLOW": "0" if args.no_follow else None,
        "MPROF_LEAK_CHECK": "0" if args.no_leak_check else None,
        "MPROF_DUMP_SIGNAL": args.dump_signal,
        "MPROF_VERBOSE": "1" if args.verbose else None,
        "MPROF_ALLOCATOR_PREFIX": args.allocator_prefix,
    }
    for name, value in settings.items():
        if value is not None:
            environment[name] = str(value)
    return environment


# Sent to mprof run, meant for the program.  Not SIGINT, SIGQUIT, SIGWINCH,
# the stop signals or SIGCONT: a terminal sends those to the whole process
# group, the program included, so mprof run ignores the first two while it
# waits, as system() does, leaves SIGWINCH and SIGCONT to their default, and
# stops when the program does (_JOB_STOPS).
_FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM)
_WAIT_IGNORES = (signal.SIGINT, signal.SIGQUIT)
# The terminal's ^Z, and its stops of a background job that reads or writes
# it.  Stopped at once, mprof run would hand the terminal back to the shell
# while the program's own handler (less, an editor) still restores it; so
# mprof run takes them while it waits and stops only once the program has
# stopped, by the same signal, and not at all if the program does not stop.
_JOB_STOPS = (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)
# Those mprof run can catch and block: not SIGKILL and SIGSTOP, nor the two
# the C library keeps for itself (32 and 33), which a process can still be
# killed by.
_CATCHABLE = signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP}


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
            os.write(ready_write, f"{error.errno or 0} {error.strerror or error}".encode())
        finally:
            os._exit(127)
    os.close(ready_write)
    with os.fdopen(ready_read, "rb") as ready:
        failure = ready.read()  # empty when the exec closed the pipe
    if failure:
        os.waitpid(pid, 0)
        code, _, why = failure.decode(errors="replace").partition(" ")
        # As a shell says it: 127 for a program not found, 126 for one found
        # but not executable.
        raise MprofError(f"{program}: cannot run: {why}", _NOT_FOUND if int(code) == errno.ENOENT else _NOT_RUN)
    return pid


def _wait(pid: int, forwarded: set[int], mask: set[int]) -> int:
    """Forwards the signals in forwarded to the program until it ends, then
    sets the signal mask to mask.  They have been blocked since before the
    fork and are taken with sigwaitinfo, with SIGCHLD and the job stops, so
    that none sent while the program starts, or just before mprof waits, is
    lost (a Python handler can run too late: after waitpid has begun to
    block).  Returns the program's wait status: how it ended, never a
    stop."""
    # An ignored SIGCHLD, inherited, would have the kernel reap the program
    # unseen; the program itself was forked with it as it was.
    child_action = signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    taken = forwarded | {signal.SIGCHLD, *_JOB_STOPS}
    stopped_by = 0  # the signal that stopped the program, while it is stopped
    # The job is being stopped: mprof run had a stop signal of its own,
    # which the program had too.  A program stopped alone (kill -STOP PID)
    # is not followed, so that continuing it alone lets the run go on.
    suspending = False
    try:
        while True:
            ended, status = os.waitpid(pid, os.WNOHANG | os.WUNTRACED | os.WCONTINUED)
            if ended:
                if os.WIFSTOPPED(status):
                    stopped_by = os.WSTOPSIG(status)
                elif os.WIFCONTINUED(status):
                    stopped_by = 0
                else:
                    return status
                continue  # another change may be waiting
            if suspending and stopped_by:
                suspending = False
                _stop_as(stopped_by)
                continue
            received = signal.sigwaitinfo(taken).si_signo
            if received in _JOB_STOPS:
                suspending = True
            elif received != signal.SIGCHLD:
                try:
                    os.kill(pid, received)
                except ProcessLookupError:
                    pass  # it has just ended: waitpid will say how
    finally:
        # A SIGINT or SIGQUIT from the terminal went to the program too:
        # ignoring it discards it, pending, before mprof's mask returns; and
        # a stop that came as the program ended would stop a finished job.
        previous = {number: signal.signal(number, signal.SIG_IGN) for number in (*_WAIT_IGNORES, *_JOB_STOPS)
                    if number not in forwarded}
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for number, handler in previous.items():
            signal.signal(number, handler)
        signal.signal(signal.SIGCHLD, child_action)


def _start_view(pid: int, mask: set[int]) -> int:
    """Forks the live view of the program (mprof top's), with mprof run's
    signal mask as it was before the run; its pid."""
    viewer = os.fork()
    if viewer:
        return viewer
    status = 1
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        # Ctrl-C leaves the view through curses, which gives the terminal
        # back as it was (run_view does the same for _end_view's SIGTERM).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from ..live.screen import Settings, run_view

        status = run_view(Settings(pid, 1.0, leave_when_ended=True, repaint=True))
    except MprofError as error:
        print(f"mprof: {error}", file=sys.stderr)
    except KeyboardInterrupt:
        status = 0
    finally:
        os._exit(status)


def _end_view(viewer: int) -> None:
    """Waits for the view, which leaves by itself once the program has
    ended; one that does not within a few seconds is ended."""
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        if os.waitpid(viewer, os.WNOHANG)[0]:
            return
        time.sleep(0.02)
    os.kill(viewer, signal.SIGTERM)
    os.waitpid(viewer, 0)


def _stop_as(number: int) -> None:
    """Stops mprof run by the signal that stopped the program, so that the
    shell sees the job stopped as it would see the program; returns when a
    SIGCONT (fg, bg: the shell sends it to the whole job) continues it."""
    if number not in _CATCHABLE:
        os.kill(os.getpid(), number)
        return
    previous = signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
    try:
        os.kill(os.getpid(), number)
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, {number})
        signal.signal(number, previous)


# A shell's exit statuses for a command it cannot find or cannot execute.
_NOT_FOUND = 127
_NOT_RUN = 126

# A build run under mprof can write thousands of files: the first are named.
_LISTED = 20


def _list(what: str, lines: list[str]) -> None:
    print(f"mprof: the run wrote {len(lines)} {what}{'s' if len(lines) != 1 else ''}:", file=sys.stderr)
    for line in lines[:_LISTED]:
        print(f"  {line}", file=sys.stderr)
    if len(lines) > _LISTED:
        print(f"  and {len(lines) - _LISTED} more", file=sys.stderr)


def _images(run_directory: Path) -> Callable[[], list[Image]]:
    """The run's process images as their records say, for the pusher."""
    from ..push.periodic import Image

    def images() -> list[Image]:
        return [Image(image.pid, next((path for kind, path in image.files if kind == "final"), None))
                for image in run_record.read(run_directory)]

    return images


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
    # The reducer and the reports, only for a run that asks: mprof run
    # itself should start as fast as the program.
    from ..report import text_tables
    from ..report.display import for_display
    from .inputs import leak_verdict, load_profile, suppressed

    model = for_display(suppressed(load_profile([Path(path) for path in paths]), args), False)
    status, why = leak_verdict(model, args.fail_on_leak, args.fail_on_leak_kinds)
    if status:
        print(text_tables.leak_table(model, text_tables.Options(path_width=200, leak_kinds=args.fail_on_leak_kinds)),
              file=sys.stderr)
        print(f"mprof: {why}", file=sys.stderr)
    return status


def _end_as(status: int) -> NoReturn:
    """Ends mprof run as the program ended: by the same signal, or with its
    exit status.  At once: nothing is left to tear down but the standard
    streams' buffers, and the interpreter's teardown would add a tenth to
    the time mprof run takes."""
    sys.stdout.flush()
    sys.stderr.flush()
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        # Its core, if any, is the program's; mprof's own would be noise.
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        if number in _CATCHABLE:
            signal.signal(number, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
        os.kill(os.getpid(), number)
        os._exit(128 + number)  # had the signal not ended mprof run: as a shell reports it
    os._exit(os.waitstatus_to_exitcode(status))


def _run_directory() -> Path:
    """A new directory of mprof run's own for the monitor's records, as
    tempfile.mkdtemp makes one, without the import of tempfile.  Absolute,
    as MPROF_OUTPUT is: the program may change directory."""
    parent = os.path.abspath(os.environ.get("TMPDIR") or "/tmp")
    while True:
        path = Path(parent, f"mprof-run-{os.urandom(6).hex()}")
        try:
            path.mkdir(mode=0o700)
            return path
        except FileExistsError:
            continue
        except OSError as error:
            raise MprofError(f"{parent}: cannot make mprof run's directory: {error.strerror}") from None


def _check_output(output: str) -> None:
    """Refuses an output the monitor would not write: a device, FIFO,
    socket or directory where the first process's file goes is never
    replaced (monitor/output.c), so the run would leave no file."""
    if "%p" in output.replace("%%", ""):
        return  # each process's own new name
    try:
        there = os.lstat(output).st_mode
    except OSError:
        return
    if stat.S_ISREG(there) or stat.S_ISLNK(there):
        return
    kind = ("a directory" if stat.S_ISDIR(there) else "a character device" if stat.S_ISCHR(there)
            else "a block device" if stat.S_ISBLK(there) else "a FIFO" if stat.S_ISFIFO(there)
            else "a socket" if stat.S_ISSOCK(there) else "not a regular file")
    raise MprofError(f"{output}: is {kind}, and the monitor replaces only a regular file; the program was not started",
                     run_settings.USAGE_ERROR)


def run(args: argparse.Namespace) -> int:
    library = library_path()
    program = args.program
    output = _output(args)
    depths = run_settings.check(args.depth, args.leak_depth, args.dump_signal, output, args.trace,
                                dict(os.environ), args.allocator_prefix)
    push = pushing.settings(args)
    if push and args.live:
        # Both would watch the program through its one request file.
        raise MprofError("--push and --live both watch the program: choose one (mprof top PID can watch it "
                         "while --push runs, pausing the pushes meanwhile)", run_settings.USAGE_ERROR)
    _check_output(output)
    if args.live:
        from .top_cmd import check_terminal  # only for a run that asks: mprof run imports little

        check_terminal()
    if args.trace:
        _check_output(f"{output}.trace")
    if os.sep not in program and not shutil.which(program):
        raise MprofError(f"{program}: command not found", _NOT_FOUND)
    arguments = args.arguments
    if arguments[:1] == ["--"]:
        arguments = arguments[1:]
    run_directory = _run_directory()
    try:
        forwarded: set[int] = set(_FORWARDED)
        if args.dump_signal and (dump := run_settings.dump_signal(args.dump_signal)):
            forwarded.add(dump)
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, forwarded | {*_WAIT_IGNORES, *_JOB_STOPS})
        try:
            pid = _start(program, arguments, monitor_environment(args, library, run_directory, depths), mask)
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            raise
        viewer = _start_view(pid, mask) if args.live else 0
        pusher = pushing.start(push, _images(run_directory), mask) if push else None
        status = _wait(pid, forwarded, mask)
        if viewer:
            _end_view(viewer)
        if pusher:
            pushing.finish(*pusher)
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
    _end_as(status)
