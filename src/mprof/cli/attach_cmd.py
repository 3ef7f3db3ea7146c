"""mprof attach and mprof detach: profile a process that was started
without mprof, from the attach to the detach."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from ..reducer.errors import MprofError
from . import pushing
from .arguments import seconds

# Not typing's (see run.py): only for the checker.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..push.periodic import Image

# How often the wait looks at the process and its file.
_POLL_S = 0.1


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    attach = subparsers.add_parser(
        "attach", help="profile a running process, from now until the detach",
        description="Load the monitor into a running process (with ptrace, as a debugger would) and record "
                    "what it allocates from now on, until --duration has passed, Ctrl-C, mprof detach PID, "
                    "or the process ends; then write the data file and leave the process running as it was.")
    attach.add_argument("pid", type=int, metavar="PID", help="the process")
    attach.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="the data file (default: mprof.out.PID in the current directory)")
    attach.add_argument("--duration", type=seconds(0, 1e9, least_included=False), metavar="SECONDS",
                        help="detach after this long")
    pushing.add_push_arguments(attach, "the process is attached")
    detach = subparsers.add_parser(
        "detach", help="end an mprof attach: the process writes its file",
        description="Detach the monitor that mprof attach loaded into a process: the process writes the data "
                    "file and runs on as it was; the mprof attach that waits for it then ends.")
    detach.add_argument("pid", type=int, metavar="PID", help="the process")


def _final_written(output: Path, since_ns: int) -> bool:
    """Whether the process has written its final file (at a detach, or as it
    ended): a checkpoint is rewritten at the same name meanwhile."""
    from ..reducer import format as fmt

    try:
        if output.stat().st_mtime_ns < since_ns:
            return False
        with open(output, "rb") as file:
            header = file.read(fmt.HEADER_SIZE)
    except OSError:
        return False
    return len(header) == fmt.HEADER_SIZE and bool(fmt.HEADER.unpack_from(header)[3] & fmt.FLAG_FINAL)


def _stop_on_signals() -> list[int]:
    """Ctrl-C (and SIGTERM, SIGHUP) end the wait, not mprof attach."""
    received: list[int] = []

    def note(number: int, frame: object) -> None:
        received.append(number)

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, note)
    return received


def _images(pid: int, output: Path, since_ns: int) -> Callable[[], list[Image]]:
    """The attached process, for the pusher: its image, and once written
    its final file."""
    from ..push.periodic import Image

    def images() -> list[Image]:
        return [Image(pid, str(output) if _final_written(output, since_ns) else None)]

    return images


def attach(args: argparse.Namespace) -> int:
    from ..attach import inject
    from ..live.watch import running
    from .run import library_path

    pid = args.pid
    if pid <= 0 or not Path(f"/proc/{pid}").is_dir():
        raise MprofError(f"process {pid}: no such process")
    if pid == os.getpid():
        raise MprofError(f"process {pid}: is mprof attach itself")
    if inject.monitor_of_run(pid):
        raise MprofError(f"process {pid}: runs under mprof already (mprof run, or libmprof linked in): "
                         f"mprof top {pid} watches it, and it writes its file as it ends")
    output = (args.output or Path(f"mprof.out.{pid}")).absolute()
    if output.is_dir():
        raise MprofError(f"{output}: is a directory")
    push = pushing.settings(args)
    started_ns = time.time_ns()
    copy, result = inject.attach(pid, library_path(), output)
    if result == inject.ALREADY:
        inject.remove_copy(copy)
        raise MprofError(f"process {pid}: mprof is attached to it already; mprof detach {pid} ends that")
    if result == inject.CANNOT_START:
        inject.remove_copy(copy)
        raise MprofError(f"process {pid}: the monitor could not start in it (a secure-execution program, or an "
                         "allocator it cannot find)")
    print(f"mprof: attached to process {pid}; Ctrl-C or mprof detach {pid} ends it"
          + (f", or {args.duration:g} s" if args.duration else ""), file=sys.stderr)
    if result == inject.PARTLY_ROUTED:
        print("mprof: warning: the calls of some of its modules could not be routed to the monitor "
              "(their tables could not be made writable): their allocations are not counted", file=sys.stderr)
    pusher = pushing.start(push, _images(pid, output, started_ns), signal.pthread_sigmask(signal.SIG_BLOCK, []))\
        if push else None
    received = _stop_on_signals()
    deadline = time.monotonic() + args.duration if args.duration else None
    try:
        while not received and (deadline is None or time.monotonic() < deadline):
            if not running(pid):
                if _final_written(output, started_ns):
                    print(f"mprof: process {pid} ended while attached; it wrote {output} as it ended",
                          file=sys.stderr)
                    return 0
                raise MprofError(f"process {pid} ended while attached, without writing {output} "
                                 "(killed outright)")
            if _final_written(output, started_ns):
                print(f"mprof: detached from process {pid} (by mprof detach); it wrote {output}", file=sys.stderr)
                return 0
            time.sleep(_POLL_S)
        if not inject.detach(pid, copy) or not _final_written(output, started_ns):
            raise MprofError(f"process {pid}: the monitor was detached already, without writing {output}")
        print(f"mprof: detached from process {pid}; it wrote {output}", file=sys.stderr)
        return 0
    finally:
        if pusher:
            pushing.finish(*pusher)
        inject.remove_copy(copy)


def detach(args: argparse.Namespace) -> int:
    from ..attach import inject

    for copy in reversed(inject.attached_copies(args.pid)):
        if inject.detach(args.pid, copy):
            print(f"mprof: detached from process {args.pid}", file=sys.stderr)
            return 0
    raise MprofError(f"process {args.pid}: mprof is not attached to it")


def run(args: argparse.Namespace) -> int:
    return attach(args) if args.command == "attach" else detach(args)
