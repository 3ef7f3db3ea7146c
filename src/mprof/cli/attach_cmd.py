"""mprof attach and mprof detach: profile a process that was started
without mprof, from the attach to the detach."""

from __future__ import annotations

import argparse
import contextlib
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

# How often the wait looks at the process and its file, and at its memory
# map (every so many looks).
_POLL_S = 0.1
_MAP_LOOKS = 10


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


class _Ending:
    """How an attachment ended without mprof attach ending it, seen from
    outside the process: its file, its memory map and the marks in the
    copy's directory."""

    def __init__(self, pid: int, copy: Path, output: Path, started_ns: int) -> None:
        self.pid, self.copy, self.output, self.started_ns = pid, copy, output, started_ns
        self.final_seen = False
        self.looks = 0

    def said(self, asking: bool = False) -> str | None:
        """The line that says how it ended, None while it is attached; an
        MprofError when it ended without the file.  asking: the monitor may
        be asked (an injection) whether it is still attached."""
        from ..attach import inject
        from ..live.watch import running

        pid, output = self.pid, self.output
        final = _final_written(output, self.started_ns)
        if final and (self.copy.parent / inject.DETACHING).exists():
            return f"mprof: detached from process {pid} (by mprof detach); it wrote {output}"
        if not running(pid):
            if final:
                return f"mprof: process {pid} ended while attached; it wrote {output} as it ended"
            raise MprofError(f"process {pid} ended while attached, without writing {output} (killed outright)")
        # An exec mprof does not route leaves no file: looked for in the
        # memory map once a second (a large process's is long to read).
        self.looks += 1
        if not final and not asking and self.looks % _MAP_LOOKS:
            return None
        try:
            loaded = self.copy in inject.mapped_libraries(pid)
        except MprofError:
            return None  # it has just ended: the next look says so
        if not loaded and final:
            return f"mprof: process {pid} executed another program, which ended the attachment; it wrote {output}"
        if not loaded:
            raise MprofError(f"process {pid} executed another program while attached, without writing {output} "
                             "(through a call mprof does not route: execveat, or the system call itself)")
        # The file is final only at the end: an exit or an exec under way
        # (seen at the next look), or an exec that failed, which ended the
        # attachment too: the monitor says it is no longer attached.
        seen_before, self.final_seen = self.final_seen, final
        if not final or not (seen_before or asking):
            return None
        try:
            attached = inject.attached_now(pid)
        except MprofError:
            return self.said() if asking else None
        if attached:
            return None
        return f"mprof: process {pid} called exec, which failed and ended the attachment; it wrote {output}"


def attach(args: argparse.Namespace) -> int:
    from ..attach import inject
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
    # From here a Ctrl-C waits for the attach under way, then ends it.
    received = _stop_on_signals()
    already = f"process {pid}: mprof is attached to it already; mprof detach {pid} ends that"
    if inject.attached_now(pid):
        raise MprofError(already)
    started_ns = time.time_ns()
    copy, result = inject.attach(pid, library_path(), output)
    if result == inject.ALREADY:
        inject.remove_copy(copy)
        raise MprofError(already)
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
    ending = _Ending(pid, copy, output, started_ns)
    deadline = time.monotonic() + args.duration if args.duration else None
    try:
        while not received and (deadline is None or time.monotonic() < deadline):
            said = ending.said()
            if said:
                print(said, file=sys.stderr)
                return 0
            time.sleep(_POLL_S)
        try:
            detached = inject.detach(pid, copy) and _final_written(output, started_ns)
        except MprofError:
            detached = False  # it ended or executed meanwhile: said below
        if detached:
            print(f"mprof: detached from process {pid}; it wrote {output}", file=sys.stderr)
            return 0
        said = ending.said(asking=True)
        if said:
            print(said, file=sys.stderr)
            return 0
        raise MprofError(f"process {pid}: the monitor was detached already, without writing {output}")
    finally:
        if pusher:
            pushing.finish(*pusher)
        inject.remove_copy(copy)


def detach(args: argparse.Namespace) -> int:
    from ..attach import inject

    for copy in reversed(inject.attached_copies(args.pid)):
        # The mprof attach that waits on this copy learns that it was
        # detached, not ended by an exec.
        mark = inject.mark_detaching(copy)
        if inject.detach(args.pid, copy):
            print(f"mprof: detached from process {args.pid}", file=sys.stderr)
            return 0
        if mark:
            with contextlib.suppress(OSError):
                mark.unlink()
    raise MprofError(f"process {args.pid}: mprof is not attached to it")


def run(args: argparse.Namespace) -> int:
    return attach(args) if args.command == "attach" else detach(args)
