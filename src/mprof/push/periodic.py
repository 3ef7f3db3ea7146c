"""The pusher of a running program: every interval it asks each process of
the run for a snapshot (the watch protocol mprof top uses), makes the
interval's profile of each answer and hands it to the sender; as a process
ends, the interval up to its final data file goes the same way.  It runs
in a process of its own, forked by mprof run or mprof attach, so that
neither the program nor the command's wait for it ever waits on it."""

from __future__ import annotations

import os
import select
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..cli.inputs import profile_of_snapshot
from ..live.watch import Watch, running
from ..reducer.errors import MprofError
from ..reducer.escape import printable
from ..report.display import for_display
from . import interval
from . import target as pyroscope
from .sender import Outgoing, Sender

# How often answers and the end of the run are looked for.
_POLL_S = 0.05
# Most seconds one push may take: a push is retried within the next interval.
LONGEST_PUSH_S = 10.0


@dataclass(frozen=True)
class Settings:
    to: pyroscope.Target
    every_s: float
    labels: tuple[tuple[str, str], ...]  # the user's, which replace the ones mprof gives

    @property
    def push_timeout_s(self) -> float:
        """How long one push may take; the run's end waits as long for the
        pushes under way: the program has ended, its command should too."""
        return max(min(self.every_s, LONGEST_PUSH_S), 0.5)


@dataclass(frozen=True)
class Image:
    """A process image of the run, as its records say: one to watch while
    it runs; its final data file, once written."""
    pid: int
    final: str | None


@dataclass
class _Process:
    """What has been pushed of one pid: an exec's image goes on under the
    same pid, its paths counted afresh."""
    keys: interval.PathKeys = field(default_factory=interval.PathKeys)
    # Where each image's next interval starts, by the image's start: an
    # image's final file may come after its successor's first snapshot.
    counts: dict[int, interval.Counts] = field(default_factory=dict)
    ended: set[int] = field(default_factory=set)  # images whose final file was pushed
    watch: Watch | None = None
    finals: set[str] = field(default_factory=set)  # final data files pushed


def labels_of(settings: Settings, program: str, pid: int) -> tuple[tuple[str, str], ...]:
    """A series' labels: the service, host, program and pid, then the
    user's, which may replace any of them."""
    return (("service_name", os.path.basename(program) or program), ("hostname", socket.gethostname()),
            ("program", program), ("pid", str(pid)), *settings.labels)


class Pusher:
    """The pushes of one run: images() says the run's process images as
    they are now."""

    def __init__(self, settings: Settings, images: Callable[[], Sequence[Image]],
                 sender: Sender | None = None) -> None:
        self._settings = settings
        self._images = images
        self._sender = sender or Sender(settings.to, settings.push_timeout_s)
        self._processes: dict[int, _Process] = {}
        self._unreadable: set[str] = set()  # snapshots or files said once to be unreadable
        self._unaskable: set[int] = set()  # processes said once not to be askable for snapshots

    def run(self, ended: int) -> None:
        """Pushes until the descriptor ended is readable (the program has
        ended, or the command that forked this process has), then pushes
        every final file and the pushes under way, for a limited time."""
        next_ask = time.monotonic() + self._settings.every_s
        try:
            while not select.select([ended], [], [], _POLL_S)[0]:
                self._take_answers()
                now = time.monotonic()
                if now >= next_ask:
                    self._ask()
                    # A late ask (a long reduction) is not made up for.
                    next_ask += self._settings.every_s * (1 + (now - next_ask) // self._settings.every_s)
            self._take_answers()
            self._push_finals(self._images())
        finally:
            for process in self._processes.values():
                if process.watch:
                    process.watch.close()
            self._sender.close(self._settings.push_timeout_s)

    def _ask(self) -> None:
        images = self._images()
        self._push_finals(images)
        for image in images:
            if image.final is not None:
                continue
            process = self._processes.setdefault(image.pid, _Process())
            if process.watch is not None:
                process.watch.ask()
            elif running(image.pid):
                try:
                    process.watch = Watch(image.pid, "push")  # its first request
                except MprofError as error:
                    # Gone meanwhile: its final file says the rest.  Else the
                    # reason it cannot be asked, said once.
                    if running(image.pid) and image.pid not in self._unaskable:
                        self._unaskable.add(image.pid)
                        print(f"mprof: push: {error}; it is not pushed while it runs", file=sys.stderr, flush=True)

    def _take_answers(self) -> None:
        for pid, process in self._processes.items():
            answer = process.watch.answered() if process.watch else None
            if answer is not None:
                self._push(pid, process, answer, snapshot=True)

    def _push_finals(self, images: Sequence[Image]) -> None:
        for image in images:
            if image.final is None:
                continue
            process = self._processes.setdefault(image.pid, _Process())
            if image.final in process.finals:
                continue
            process.finals.add(image.final)
            self._push(image.pid, process, Path(image.final), snapshot=False)
            if process.watch and not any(i.pid == image.pid and i.final is None for i in images):
                process.watch.close()
                process.watch = None

    def _push(self, pid: int, process: _Process, path: Path, snapshot: bool) -> None:
        try:
            model, _ = profile_of_snapshot(path)
        except MprofError as error:
            if str(path) not in self._unreadable:
                self._unreadable.add(str(path))
                print(f"mprof: push: {error}", file=sys.stderr, flush=True)
            return
        if not model.runs:
            return
        start_ns, time_ns = interval.taken_at(model)
        since = process.counts.get(start_ns)
        if start_ns in process.ended or (since is not None and since.time_ns >= time_ns):
            return  # an answer older than what was pushed: its final file came first
        data, counts = interval.interval_profile(for_display(model), process.keys, since)
        if snapshot:
            process.counts[start_ns] = counts
        else:
            process.counts.pop(start_ns, None)
            process.ended.add(start_ns)
        # The program's path as the reports show it: a label is text.
        self._sender.put(Outgoing(labels_of(self._settings, printable(model.runs[0].program), pid), data))
