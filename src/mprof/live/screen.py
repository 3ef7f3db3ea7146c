"""The live view on a terminal (curses): asks the watched process for its
figures every interval, shows them as view.py lays them out, and takes the
keys that change the order, and the one that asks for the live blocks
classified, once; q (or Ctrl-C) leaves, the process running."""

from __future__ import annotations

import curses
import locale
import os
import signal
import sys
import time
from dataclasses import dataclass

from ..reducer.errors import MprofError
from .sample import take
from .view import CLASSIFY_KEY, ORDER_KEYS, ViewState, lines
from .watch import Watch, has_monitor, resident_bytes, running

# Keys are looked for this often between refreshes.
_KEY_WAIT_MS = 100
# With no answer for this long, the view says why there may be none.
_PATIENCE_S = 3.0


@dataclass(frozen=True)
class Settings:
    pid: int
    interval: float  # seconds between requests
    leave_when_ended: bool  # mprof run --live: the run goes on to its end
    repaint: bool  # the program shares the terminal: each refresh repaints it all


def _on_terminal() -> None:
    """Standard input and output on the controlling terminal, where they
    are not a terminal already (mprof run --live with the program's output
    redirected): curses draws on them.  Only the view's own process is
    changed, and it ends with the view."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return
    sys.stdout.flush()
    terminal = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    for fd in (0, 1):
        os.dup2(terminal, fd)
    os.close(terminal)


def _leave(number: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_view(settings: Settings) -> int:
    """Shows the view until q; 0.  A hang-up or SIGTERM leaves it as q
    does: the terminal as it was, the request and the snapshots removed."""
    signal.signal(signal.SIGHUP, _leave)
    signal.signal(signal.SIGTERM, _leave)
    _on_terminal()
    locale.setlocale(locale.LC_ALL, "")
    with Watch(settings.pid) as watch:
        try:
            return curses.wrapper(lambda screen: _loop(screen, watch, settings))
        except KeyboardInterrupt:
            return 0


def _draw(screen: curses.window, state: ViewState, repaint: bool) -> None:
    height, width = screen.getmaxyx()
    screen.erase()
    for y, line in enumerate(lines(state, width, height)):
        # The bottom right cell cannot be written without curses moving
        # past it: the last line stops one short.
        text = line[:width - 1] if y == height - 1 else line
        try:
            screen.addstr(y, 0, text)
        except UnicodeEncodeError:
            screen.addstr(y, 0, text.encode("ascii", "replace").decode())
        except curses.error:
            pass
    if repaint:
        screen.clearok(True)
    screen.refresh()


def _loop(screen: curses.window, watch: Watch, settings: Settings) -> int:
    try:
        curses.curs_set(0)
    except curses.error:
        pass  # a terminal that cannot hide its cursor
    screen.timeout(_KEY_WAIT_MS)
    state = ViewState(settings.pid)
    started = time.monotonic()
    next_ask = asked = 0.0
    while True:
        now = time.monotonic()
        changed = False
        if not state.ended and now >= next_ask:
            watch.ask()
            asked = now
            next_ask = now + settings.interval
            state.resident = resident_bytes(settings.pid)
            changed = True
        answer = watch.answered()
        if answer is not None:
            try:
                sample = take(answer)
            except MprofError as error:
                state.note = str(error)
            else:
                state.add(sample, asked_to_classify=answer == watch.classified)
                state.note = f"warning: {sample.warnings[0]}" if sample.warnings else ""
            changed = True
            # The next figures are asked for as long before the refresh as
            # these took to come and be reduced: none on the screen is
            # older than one interval.
            next_ask = max(asked + settings.interval - (time.monotonic() - asked), asked + _KEY_WAIT_MS / 1000)
        if not state.ended and not running(settings.pid):
            if settings.leave_when_ended:
                return 0
            state.ended = True
            state.note = f"process {settings.pid} has ended; q leaves"
            changed = True
        elif state.current is None and now - started > _PATIENCE_S:
            state.note = (f"no figures yet: process {settings.pid} has not allocated since the view began"
                          if has_monitor(settings.pid) else
                          # Within 80 columns with a 7-digit pid: what to do is not cut off.
                          f"no figures: process {settings.pid} has no libmprof; start it with mprof run")
        if changed:
            _draw(screen, state, settings.repaint)
        key = screen.getch()
        if key in (ord("q"), ord("Q")):
            return 0
        if key == ord(CLASSIFY_KEY) and not state.ended and not state.classifying:
            # This ask's answer is the refresh's too.
            watch.ask(classify=True)
            asked = time.monotonic()
            next_ask = asked + settings.interval
            state.classifying = True
            _draw(screen, state, False)
        if key == curses.KEY_RESIZE or (0 <= key < 256 and chr(key) in ORDER_KEYS and state.choose(chr(key))):
            _draw(screen, state, False)
