"""Pushing profiles from a thread of their own, so that a slow or absent
server never holds up the next snapshot: each profile is tried a few
times, then dropped; what went wrong is said on mprof's stderr once, when
pushes start failing, and again when they work again."""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..reducer.escape import printable
from . import target as pyroscope

# Tries of one profile, and the pause before each retry.
ATTEMPTS = 3
RETRY_PAUSES_S = (1.0, 3.0)
# Profiles waiting while the server does not answer: past this many, the
# oldest is dropped for the newest.
MOST_WAITING = 16


@dataclass(frozen=True)
class Outgoing:
    labels: tuple[tuple[str, str], ...]
    profile: bytes


def _say(line: str) -> None:
    print(f"mprof: {line}", file=sys.stderr, flush=True)


class Sender:
    """The pushes of one run to one server."""

    def __init__(self, to: pyroscope.Target, timeout_s: float, say: Callable[[str], None] = _say,
                 send: Callable[[pyroscope.Target, Sequence[tuple[str, str]], bytes, float], None] = pyroscope.send
                 ) -> None:
        self._to = to
        self._timeout_s = timeout_s
        self._say = say
        self._send = send
        self._waiting: deque[Outgoing] = deque()
        self._under_way: Outgoing | None = None  # taken from _waiting by the thread, being tried
        self._changed = threading.Condition()
        self._closing_by: float | None = None  # monotonic deadline once close() is called
        self._closed = threading.Event()  # wakes a retry's pause: one more try within close()'s time
        self._failing = False  # pushes fail: said once, until one works
        self._dropped = 0  # since the failure was said
        self.sent = 0
        self._thread = threading.Thread(target=self._run, name="mprof push", daemon=True)
        self._thread.start()

    def put(self, outgoing: Outgoing) -> None:
        with self._changed:
            if len(self._waiting) >= MOST_WAITING:
                self._waiting.popleft()
                self._drop("the server fell behind")
            self._waiting.append(outgoing)
            self._changed.notify()

    def close(self, within_s: float) -> None:
        """Sends what waits for at most within_s more seconds, then drops the
        rest, saying so."""
        with self._changed:
            self._closing_by = time.monotonic() + within_s
            self._changed.notify()
        self._closed.set()
        self._thread.join(within_s + 0.5)
        with self._changed:
            left = len(self._waiting) + (self._under_way is not None)
            self._waiting.clear()
            self._under_way = None
            self._dropped += left
            if self._dropped:
                self._say(f"push to {self._to.shown}: {self._dropped} "
                          f"{'profile' if self._dropped == 1 else 'profiles'} of the run could not be sent, and "
                          f"{'was' if self._dropped == 1 else 'were'} dropped")
            self._dropped = 0

    def _remaining(self) -> float | None:
        return None if self._closing_by is None else self._closing_by - time.monotonic()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._waiting and self._closing_by is None:
                    self._changed.wait()
                if not self._waiting:
                    return
                outgoing = self._under_way = self._waiting.popleft()
            reason = self._try(outgoing)
            with self._changed:
                self._under_way = None
                if reason is None:
                    self.sent += 1
                    if self._failing:
                        self._failing = False
                        self._say(f"push to {self._to.shown} works again; {self._dropped} "
                                  f"{'profile was' if self._dropped == 1 else 'profiles were'} dropped meanwhile")
                        self._dropped = 0
                else:
                    self._drop(reason)
                remaining = self._remaining()
                if remaining is not None and remaining <= 0:
                    return

    def _try(self, outgoing: Outgoing) -> str | None:
        """Sends one profile, retrying; why it could not be sent, or None."""
        reason = ""
        for attempt in range(ATTEMPTS):
            remaining = self._remaining()
            if remaining is not None and remaining <= 0:
                return reason or "the run ended before it could be sent"
            timeout = self._timeout_s if remaining is None else max(min(self._timeout_s, remaining), 0.05)
            try:
                self._send(self._to, outgoing.labels, outgoing.profile, timeout)
                return None
            except pyroscope.PushFailed as failure:
                reason = str(failure)
                if failure.lasting or attempt + 1 == ATTEMPTS:
                    break
            pause = RETRY_PAUSES_S[min(attempt, len(RETRY_PAUSES_S) - 1)]
            remaining = self._remaining()
            if remaining is not None:
                pause = min(pause, max(remaining, 0))
            self._closed.wait(pause)
        return reason

    def _drop(self, reason: str) -> None:
        """Called with the condition held."""
        self._dropped += 1
        if not self._failing:
            self._failing = True
            # The reason may be the server's words: escaped for the terminal.
            self._say(f"push to {self._to.shown} failed: {printable(reason)}; profiles are dropped until it works "
                      "again")
