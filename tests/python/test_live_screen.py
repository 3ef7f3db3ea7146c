"""The live view's terminal side (mprof.live.screen) in the test's own
process: its loop given a terminal, a watch and a clock that the test
plays (a key, an answer, the process's end, at the moments it says), the
answers snapshots written by hand (test_live_samples.py); what it draws;
and how it starts and leaves."""

from __future__ import annotations

import curses
import fcntl
import locale
import os
import pty
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mprof.live import screen as screen_module
from mprof.live.screen import Settings, _draw, _loop, run_view
from mprof.live.view import KEYS, ViewState
from test_live_samples import LEAK_LINES, MIB, TIMELINE, classified_snapshot, frames_in_files, snapshot

__all__ = ["frames_in_files"]  # the fixture, used here by name

PID = 4242


class Clock:
    """time.monotonic as the loop sees it: moved on only by the terminal's
    waits for a key, an eighth of a second each (exact in binary: the
    moments the test gives are the loop's to the bit)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@dataclass
class Terminal:
    """A curses window of height x width: what was written where, in each
    frame drawn; keys given by the moment they come (each getch waits on
    the clock, as curses would its timeout, until the next key if one
    comes meanwhile, else -1)."""
    clock: Clock
    height: int = 24
    width: int = 80
    keys: list[tuple[float, int]] = field(default_factory=list)  # (seconds from the start, key)
    frames: list[list[str]] = field(default_factory=list)
    cleared: list[bool] = field(default_factory=list)  # each refresh: whether clearok(True) came before it
    wait_ms: int | None = None
    unwritable: str = ""  # a line that starts so cannot be written (curses.error)
    _lines: dict[int, str] = field(default_factory=dict)
    _clear: bool = False

    def getmaxyx(self) -> tuple[int, int]:
        return self.height, self.width

    def erase(self) -> None:
        self._lines = {}

    def addstr(self, y: int, x: int, text: str) -> None:
        assert x == 0 and 0 <= y < self.height and len(text) <= self.width - (y == self.height - 1)
        if self.unwritable and text.startswith(self.unwritable):
            raise curses.error("addwstr() returned ERR")
        text.encode("ascii")  # a terminal of the C locale: UnicodeEncodeError
        self._lines[y] = text

    def clearok(self, flag: bool) -> None:
        self._clear = flag

    def refresh(self) -> None:
        self.frames.append([self._lines.get(y, "") for y in range(max(self._lines, default=-1) + 1)])
        self.cleared.append(self._clear)
        self._clear = False

    def timeout(self, ms: int) -> None:
        self.wait_ms = ms

    def getch(self) -> int:
        assert self.wait_ms is not None
        assert self.clock.now < 1100.0, "the loop did not end"
        waited = self.clock.now + 0.125
        if self.keys and 1000.0 + self.keys[0][0] <= waited:  # a key before the wait is over ends it
            self.clock.now = max(self.clock.now, 1000.0 + self.keys[0][0])
            return self.keys.pop(0)[1]
        self.clock.now = waited
        return -1


@dataclass
class FakeWatch:
    """Answers each ask after delay_s on the clock with the next of
    answers (none once they run out); an ask to classify, with the next of
    classified_answers, copied to the name of such answers, classified."""
    clock: Clock
    answers: list[Path]
    delay_s: float = 0.25
    classified_answers: list[Path] = field(default_factory=list)
    classified: Path = Path("/nowhere/classified.mprof")
    asked: list[float] = field(default_factory=list)  # seconds from the start
    asked_to_classify: list[float] = field(default_factory=list)  # the same asks' that asked to classify
    _due: list[tuple[float, bool]] = field(default_factory=list)

    def ask(self, classify: bool = False) -> None:
        self.asked.append(round(self.clock.now - 1000.0, 6))
        if classify:
            self.asked_to_classify.append(self.asked[-1])
        if self.classified_answers if classify else self.answers:
            self._due.append((self.clock.now + self.delay_s, classify))

    def answered(self) -> Path | None:
        if self._due and self._due[0][0] <= self.clock.now:
            _, classify = self._due.pop(0)
            if not classify:
                return self.answers.pop(0)
            shutil.copyfile(self.classified_answers.pop(0), self.classified)
            return self.classified
        return None


@dataclass
class Process:
    """What /proc says of the watched process: running until ends_at_s."""
    clock: Clock
    ends_at_s: float = 1e9
    monitored: bool = True

    def running(self, pid: int) -> bool:
        assert pid == PID
        return self.clock.now - 1000.0 < self.ends_at_s

    def resident(self, pid: int) -> int | None:
        return 6 * MIB + int(self.clock.now - 1000.0) if self.running(pid) else None

    def has_monitor(self, pid: int) -> bool:
        assert pid == PID
        return self.monitored


@pytest.fixture
def played(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Clock, Process]]:
    clock = Clock()
    process = Process(clock)
    monkeypatch.setattr(screen_module, "time", clock)
    monkeypatch.setattr(screen_module, "running", process.running)
    monkeypatch.setattr(screen_module, "resident_bytes", process.resident)
    monkeypatch.setattr(screen_module, "has_monitor", process.has_monitor)
    monkeypatch.setattr(curses, "curs_set", lambda visibility: 1)
    yield clock, process


def loop(terminal: Terminal, watch: FakeWatch, interval: float = 1.0, leave_when_ended: bool = False,
         repaint: bool = False) -> int:
    return _loop(terminal, watch, Settings(PID, interval, leave_when_ended, repaint))  # type: ignore[arg-type]


def snapshots(directory: Path) -> list[Path]:
    """The program of test_live_samples at 1, 2 and 4 seconds."""
    return [snapshot(directory, "1.mprof", 1.0, 8, 200, 1, (4352, 1.0), TIMELINE),
            snapshot(directory, "2.mprof", 2.0, 24, 600, 1, (12544, 2.0), [*TIMELINE, (2.0, 12544, 28, 5 * MIB)]),
            snapshot(directory, "4.mprof", 4.0, 40, 1000, 3, (20800, 3.9),
                     [*TIMELINE, (2.0, 12544, 28, 5 * MIB), (3.0, 16000, 35, 6 * MIB), (4.0, 20608, 42, 6 * MIB)])]


def test_the_loop_asks_each_interval_after_the_last_answer_and_shows_each(
        played: tuple[Clock, Process], tmp_path: Path) -> None:
    """Asks at once, then, after each answer, as long before one interval
    after its ask as the answer took to come (0.25 s here): the next
    answer comes an interval after the last ask, and the figures shown are
    never older than an interval.  Each answer is drawn as it comes, with
    the resident set read at the last ask; q leaves."""
    clock, _ = played
    terminal = Terminal(clock, keys=[(3.0, ord("q"))])
    watch = FakeWatch(clock, snapshots(tmp_path))
    assert loop(terminal, watch) == 0
    assert terminal.wait_ms == 100
    assert watch.asked == [0.0, 0.75, 1.5, 2.25]
    tops = [frame[0] for frame in terminal.frames]
    # An ask draws the frame again; an answer draws its figures.
    assert tops == ["mprof top  pid 4242  waiting  ",
                    "mprof top  pid 4242  at 0:00:01  prog --flag",
                    "mprof top  pid 4242  at 0:00:01  prog --flag",
                    "mprof top  pid 4242  at 0:00:02  prog --flag",
                    "mprof top  pid 4242  at 0:00:02  prog --flag",
                    "mprof top  pid 4242  at 0:00:04  prog --flag",
                    "mprof top  pid 4242  at 0:00:04  prog --flag"]
    assert terminal.frames[0][2] == "waiting for the first figures"
    last = terminal.frames[-1]
    # Resident: read at the ask of 2.25 s, 1 byte a second above 6 MiB here.
    assert last[2] == "resident 6,291,458 bytes   growth +16,256 bytes since the view began"
    assert last[8:] == ["        20,480     40        8      0  +16.0K  main > grow_cache > remember",
                        "           128      2        0      0    -128  main > helper"]
    assert not any(terminal.cleared)


def test_asks_are_a_tenth_of_a_second_apart_at_least(played: tuple[Clock, Process], tmp_path: Path) -> None:
    """At a short interval (1/8 s) with answers that take 1/32 s and keys
    pressed every 1/64 s (each ends the wait for a key), the next ask waits
    a tenth of a second after the last, not the interval less the
    answer's time: 7/64 s apart."""
    clock, _ = played
    # And one key just before the tenth of a second is up.
    keys = sorted([(n / 64, ord("x")) for n in range(1, 32)] + [(0.09995, ord("x")), (0.5, ord("q"))])
    terminal = Terminal(clock, keys=keys)
    watch = FakeWatch(clock, snapshots(tmp_path)[:1] * 4, delay_s=1 / 32)
    assert loop(terminal, watch, interval=0.125) == 0
    assert watch.asked == [0.0, 7 / 64, 14 / 64, 21 / 64, 28 / 64]


def test_keys_choose_the_order_and_redraw(played: tuple[Clock, Process], tmp_path: Path) -> None:
    """a, t, g, l choose an order, drawn at once; another key nothing; a
    resize draws again; Q leaves as q does."""
    clock, _ = played
    keys = [(0.5, ord("a")), (0.625, ord("x")), (0.75, 0x1_0000), (0.875, curses.KEY_RESIZE), (1.0, ord("t")),
            (1.125, ord("Q"))]
    terminal = Terminal(clock, keys=keys)
    assert loop(terminal, FakeWatch(clock, snapshots(tmp_path)[:1], delay_s=0.1), interval=5.0) == 0
    assert terminal.frames[0] == ["mprof top  pid 4242  waiting  ", "", "waiting for the first figures"]
    orders = [frame[5].split("   ")[0] for frame in terminal.frames[1:]]
    assert orders == ["by live bytes", "by allocations/s", "by allocations/s", "by temporaries"]
    assert terminal.frames[-1][8:] == ["             0      0      200    200       0  main > churn > scratch"]


def test_the_classify_key_asks_once_and_the_kinds_stay_until_the_next(played: tuple[Clock, Process],
                                                                         tmp_path: Path) -> None:
    """c asks at once for one answer classified, which is that refresh's
    answer too: drawn with the leak kinds, kept through the answers after
    it, which are asked for without classifying; c again while the answer
    is awaited asks nothing more.  No ask classifies before the key."""
    clock, _ = played
    terminal = Terminal(clock, keys=[(1.0, ord("c")), (1.125, ord("c")), (3.0, ord("q"))])
    watch = FakeWatch(clock, snapshots(tmp_path), classified_answers=[classified_snapshot(tmp_path)],
                      classified=tmp_path / "classified.mprof")
    assert loop(terminal, watch) == 0
    assert watch.asked == [0.0, 0.75, 1.0, 1.75, 2.5]
    assert watch.asked_to_classify == [1.0]
    waiting = "leak kinds: classifying (the process stops its threads to scan its heap)"
    # Each frame's line after the sparklines: none before the key.  The
    # answer to the ask before the key comes after it, not classified.
    fifth = [frame[5] if len(frame) > 5 else "" for frame in terminal.frames]
    assert fifth == ["", f"by live bytes   {KEYS}", f"by live bytes   {KEYS}", waiting, waiting,
                     *[LEAK_LINES[0]] * 4]
    assert terminal.frames[4][0] == "mprof top  pid 4242  at 0:00:02  prog --flag"
    assert terminal.frames[5][5:12] == [*LEAK_LINES, f"by live bytes   {KEYS}"]
    # The last answer's figures, the kinds of the classified one.
    assert terminal.frames[-1][5:12] == [*LEAK_LINES, f"by live bytes   {KEYS}"]
    assert terminal.frames[-1][1] == "live 20,608 bytes in 42 blocks   peak 20,800 bytes at 0:00:03"


def test_an_answer_to_classify_without_the_kinds_is_said(played: tuple[Clock, Process], tmp_path: Path) -> None:
    """The process answered the ask to classify without classifying (its
    MPROF_LEAK_CHECK=0, or an older libmprof): the view says so."""
    clock, _ = played
    terminal = Terminal(clock, keys=[(0.5, ord("c")), (1.0, ord("q"))])
    plain = snapshots(tmp_path)
    watch = FakeWatch(clock, plain[:1], classified_answers=plain[1:2], classified=tmp_path / "classified.mprof")
    assert loop(terminal, watch) == 0
    assert watch.asked_to_classify == [0.5]
    assert terminal.frames[-1][5] == "leak kinds: not classified (MPROF_LEAK_CHECK=0, or a libmprof before them)"


def test_the_loop_says_why_no_figures_come(played: tuple[Clock, Process], tmp_path: Path) -> None:
    """No answer within 3 seconds: the view says whether the process has
    the monitor in its memory at all."""
    clock, process = played
    terminal = Terminal(clock, keys=[(5.5, ord("q"))])
    assert loop(terminal, FakeWatch(clock, [])) == 0
    notes = [frame[2] for frame in terminal.frames]
    # Drawn at each ask; the note once 3 seconds have passed.
    assert notes == ["waiting for the first figures"] * 4 + [
        f"no figures yet: process {PID} has not allocated since the view began"] * 2
    process.monitored = False
    clock.now = 1000.0
    terminal = Terminal(clock, keys=[(4.5, ord("q"))])
    assert loop(terminal, FakeWatch(clock, [])) == 0
    assert terminal.frames[-1][2] == f"no figures: process {PID} has no libmprof; start it with mprof run"
    assert len(f"no figures: process {4_194_304} has no libmprof; start it with mprof run") <= 80


def test_the_loop_shows_a_warning_or_an_error_of_an_answer(played: tuple[Clock, Process], tmp_path: Path) -> None:
    """The reduction's first warning on the note line while that answer is
    shown; an answer that cannot be read, said there, the figures before
    kept."""
    clock, _ = played
    warned = snapshot(tmp_path, "w.mprof", 1.0, 8, 0, 0, (4096, 1.0), [],
                      refused_settings=b"MPROF_DEPTH=5000\0MPROF_BLOCKS=x\0")
    broken = tmp_path / "broken.mprof"
    broken.write_bytes(b"not a data file")
    terminal = Terminal(clock, keys=[(2.0, ord("q"))])
    assert loop(terminal, FakeWatch(clock, [warned, broken, snapshots(tmp_path)[0]])) == 0
    notes = [(frame[0], frame[6]) for frame in terminal.frames if len(frame) > 6]
    at_1 = "mprof top  pid 4242  at 0:00:01  prog --flag"
    assert notes == [
        (at_1, f"warning: {warned}: the monitor did not accept MPROF_DEPTH=5000, MPROF_BLOCKS=x and kept its "
               "defaults"[:80]),
        (at_1, f"warning: {warned}: the monitor did not accept MPROF_DEPTH=5000, MPROF_BLOCKS=x and kept its "
               "defaults"[:80]),
        (at_1, f"{broken}: not an mprof data file (bad magic)"[:80]),
        (at_1, f"{broken}: not an mprof data file (bad magic)"[:80]),
        (at_1, "")]


def test_the_end_of_the_process(played: tuple[Clock, Process], tmp_path: Path) -> None:
    """Once the process has ended the view says so and asks no more, the
    last figures kept, until q; mprof run --live's view leaves at once."""
    clock, process = played
    process.ends_at_s = 1.25
    terminal = Terminal(clock, keys=[(4.0, ord("q"))])
    watch = FakeWatch(clock, snapshots(tmp_path))
    assert loop(terminal, watch) == 0
    assert watch.asked == [0.0, 0.75]
    assert terminal.frames[-1][:3] == ["mprof top  pid 4242  ended  prog --flag",
                                       "live 12,544 bytes in 28 blocks   peak 12,544 bytes at 0:00:02",
                                       "resident 6,291,456 bytes   growth +8,192 bytes since the view began"]
    assert terminal.frames[-1][6] == f"process {PID} has ended; q leaves"
    assert len(terminal.frames) == 5  # the asks, the answers, the end: nothing after
    clock.now = 1000.0
    terminal = Terminal(clock)
    watch = FakeWatch(clock, snapshots(tmp_path))
    assert loop(terminal, watch, leave_when_ended=True) == 0
    assert clock.now == 1001.25 and watch.asked == [0.0, 0.75]


def test_a_program_sharing_the_terminal_has_it_repainted(played: tuple[Clock, Process], tmp_path: Path) -> None:
    """mprof run --live with the program's output on the terminal: every
    refresh repaints it all (clearok), not a key's."""
    clock, _ = played
    terminal = Terminal(clock, keys=[(0.5, ord("a")), (1.0, ord("q"))])
    assert loop(terminal, FakeWatch(clock, snapshots(tmp_path)), repaint=True) == 0
    assert terminal.cleared == [True, True, False, True]


def test_a_terminal_that_cannot_hide_its_cursor(played: tuple[Clock, Process], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    clock, _ = played

    def cannot(visibility: int) -> int:
        assert visibility == 0
        raise curses.error("curs_set() returned ERR")

    monkeypatch.setattr(curses, "curs_set", cannot)
    terminal = Terminal(clock, keys=[(0.5, ord("q"))])
    assert loop(terminal, FakeWatch(clock, snapshots(tmp_path))) == 0
    assert terminal.frames[-1][0] == "mprof top  pid 4242  at 0:00:01  prog --flag"


def state_of(paths: list[Path]) -> ViewState:
    state = ViewState(PID)
    for path in paths:
        state.add(screen_module.take(path))
    return state


def test_drawing_keeps_off_the_last_cell_and_writes_what_it_can(tmp_path: Path) -> None:
    """The bottom line stops one column short (curses cannot write the
    bottom right cell); a name the terminal cannot show is written with ?
    for what it cannot; a line curses refuses is left out, the rest drawn."""
    clock = Clock()
    state = state_of(snapshots(tmp_path))
    assert state.choose("g")
    terminal = Terminal(clock, height=6)
    _draw(terminal, state, False)  # type: ignore[arg-type]
    assert terminal.frames == [["mprof top  pid 4242  at 0:00:04  prog --flag",
                                "live 20,608 bytes in 42 blocks   peak 20,800 bytes at 0:00:03",
                                "resident -   growth +16,256 bytes since the view began",
                                "live        20.1 KiB |..=*#",
                                "resident     6.0 MiB |++*##",
                                "by growth since the view began"]]
    named = snapshot(tmp_path, "c.mprof", 1.0, 8, 0, 0, (4096, 1.0), [], cmdline="caf\u00e9 \u2192".encode())
    state = state_of([named])
    terminal = Terminal(clock, unwritable="live ")
    _draw(terminal, state, True)  # type: ignore[arg-type]
    assert terminal.frames[0][:3] == ["mprof top  pid 4242  at 0:00:01  caf? ?", "",
                                      "resident -   growth +0 bytes since the view began"]
    assert terminal.cleared == [True]


def test_leaving_on_a_hang_up_or_sigterm() -> None:
    for number in (signal.SIGHUP, signal.SIGTERM):
        with pytest.raises(KeyboardInterrupt):
            screen_module._leave(number, None)


@dataclass
class ViewRun:
    """What run_view did, with curses and the watch played by the test."""
    watched: list[int] = field(default_factory=list)
    closed: bool = False
    handlers: dict[int, object] = field(default_factory=dict)
    ctype: str = ""


@pytest.fixture
def view_run(monkeypatch: pytest.MonkeyPatch, played: tuple[Clock, Process]) -> Iterator[ViewRun]:
    clock, _ = played
    run = ViewRun()

    class Watched:
        def __init__(self, pid: int) -> None:
            run.watched.append(pid)
            self.watch = FakeWatch(clock, [])

        def __enter__(self) -> FakeWatch:
            return self.watch

        def __exit__(self, *exc: object) -> None:
            run.closed = True

    def wrapper(draw: Callable[[Terminal], int]) -> int:
        run.handlers = {number: signal.getsignal(number) for number in (signal.SIGHUP, signal.SIGTERM)}
        run.ctype = locale.setlocale(locale.LC_CTYPE)
        return draw(Terminal(clock, keys=[(0.5, ord("q"))]))

    monkeypatch.setattr(screen_module, "Watch", Watched)
    monkeypatch.setattr(curses, "wrapper", wrapper)
    monkeypatch.setattr(screen_module, "_on_terminal", lambda: None)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    saved = {number: signal.getsignal(number) for number in (signal.SIGHUP, signal.SIGTERM)}
    ctype = locale.setlocale(locale.LC_CTYPE)
    try:
        yield run
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)
        locale.setlocale(locale.LC_ALL, "C")
        locale.setlocale(locale.LC_CTYPE, ctype)


def test_the_view_watches_in_the_users_locale_and_leaves_on_signals(view_run: ViewRun) -> None:
    """run_view: the process watched for the view's time, the terminal in
    the user's locale (curses writes UTF-8 only then), a hang-up or SIGTERM
    leaving as q does; 0."""
    locale.setlocale(locale.LC_ALL, "C")
    assert run_view(Settings(PID, 1.0, False, False)) == 0
    assert view_run.watched == [PID] and view_run.closed
    assert view_run.handlers == {signal.SIGHUP: screen_module._leave, signal.SIGTERM: screen_module._leave}
    assert view_run.ctype == "C.UTF-8"


def test_the_view_leaves_on_ctrl_c(view_run: ViewRun, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(draw: Callable[[Terminal], int]) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(curses, "wrapper", interrupted)
    assert run_view(Settings(PID, 1.0, False, False)) == 0
    assert view_run.closed


def in_a_session_of_its_own(run: Callable[[str], list[str]]) -> list[str]:
    """run(terminal) in a child process of the test's, in a session of its
    own whose controlling terminal is a new pty's, named terminal; what it
    returns (os.fork: the code run is the test process's, as loaded)."""
    leader, follower = pty.openpty()
    name = os.ttyname(follower)
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child's outcome is read below)
        found = ["failed"]
        try:
            os.close(reading)
            os.setsid()
            os.close(os.open(name, os.O_RDWR))  # the controlling terminal now
            found = run(name)
        finally:
            os.write(writing, "\n".join(found).encode())
            os._exit(0)
    os.close(writing)
    os.close(follower)
    with open(reading) as answer:
        found = answer.read().split("\n")
    os.waitpid(child, 0)
    os.close(leader)
    return found


def standard_files(stdin: str, stdout: str) -> None:
    """fds 0 and 1 open on those files, 2 on /dev/null; sys.stdin and
    sys.stdout on them."""
    for fd, path in ((0, stdin), (1, stdout), (2, os.devnull)):
        opened = os.open(path, os.O_RDWR)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin, sys.stdout = open(0, closefd=False), open(1, "w", closefd=False)  # noqa: SIM115


def where(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


class OnTerminal:
    """A standard file on a terminal, that must not be flushed."""

    def isatty(self) -> bool:
        return True

    def flush(self) -> None:
        raise AssertionError("flushed")


def test_the_view_takes_the_terminal_where_output_goes_elsewhere(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """mprof run --live with the program's input or output redirected: the
    view's standard input and output become its controlling terminal, for
    reading and writing, what it had written before going where it was
    going; standard error stays; no descriptor is left open.  Both on a
    terminal already (here, in the test's process too): nothing is done."""
    monkeypatch.setattr(sys, "stdin", OnTerminal())
    monkeypatch.setattr(sys, "stdout", OnTerminal())
    fds = sorted(os.listdir("/proc/self/fd"))
    screen_module._on_terminal()
    assert sorted(os.listdir("/proc/self/fd")) == fds
    monkeypatch.undo()
    written = tmp_path / "output"

    def run(terminal: str) -> list[str]:
        found = [terminal]
        for stdin, stdout in ((os.devnull, str(written)), (terminal, str(written)), (os.devnull, terminal)):
            written.write_text("")
            standard_files(stdin, stdout)
            print("before the view", end="")
            before = sorted(os.listdir("/proc/self/fd"))
            screen_module._on_terminal()
            found += [where(0), where(1), where(2), str(sorted(os.listdir("/proc/self/fd")) == before),
                      str(fcntl.fcntl(0, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDWR),
                      str(fcntl.fcntl(1, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDWR), written.read_text()]
        return found

    terminal, *found = in_a_session_of_its_own(run)
    assert terminal.startswith("/dev/pts/")
    taken = ["/dev/tty", "/dev/tty", os.devnull, "True", "True", "True"]
    # The output on the terminal at first (the last) went there.
    assert found == [*taken, "before the view", *taken, "before the view", *taken, ""]


def test_the_view_keeps_a_terminal_it_has(tmp_path: Path) -> None:
    """Standard input and output both on a terminal (another than the
    controlling one here): left as they are."""
    other_leader, other = pty.openpty()
    other_name = os.ttyname(other)

    def run(terminal: str) -> list[str]:
        standard_files(other_name, other_name)
        screen_module._on_terminal()
        return [where(0), where(1)]

    try:
        assert in_a_session_of_its_own(run) == [other_name, other_name]
    finally:
        os.close(other)
        os.close(other_leader)
