"""The pusher of a running program (push/periodic.py), in the test's
process: snapshots and final data files written by hand with known
allocations, a watch that answers with them, and a sender that records what
it is given; the interval profiles each push holds, worked out from the
allocations."""

from __future__ import annotations

import base64
import json
import os
import socket
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from hand_profiles import NamedFrames, recorded
from mprof.push import periodic
from mprof.push import target as pyroscope
from mprof.push.sender import Outgoing
from mprof.reducer import profile as profile_module
from mprof.reducer.errors import MprofError
from test_push_sender import _decoded, _Recorder, recorder  # noqa: F401 (recorder: a fixture)

# A return address in each function, named caller_callee.
MAIN_A, MAIN_B, A_MALLOC, B_MALLOC = 0x1100, 0x1200, 0x2100, 0x3100
START_NS = 1_700_000_000_000_000_000
S = 10**9
PID = 4242


class KnownFrames(NamedFrames):
    function_of = {MAIN_A: "main", MAIN_B: "main", A_MALLOC: "a", B_MALLOC: "b"}


@pytest.fixture(autouse=True)
def known_frames(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(profile_module, "Resolver", KnownFrames)
    yield


def data_file(directory: Path, name: str, chains: Sequence[tuple[tuple[int, ...], int, int, int, int]],
              elapsed_s: int, final: bool, start_ns: int = START_NS) -> Path:
    """A data file of the process PID: chains (addresses outermost first,
    size, blocks, blocks freed, temporaries among those freed) as the
    monitor records them, elapsed_s into the run that started at start_ns."""
    builder = recorded([(chain, size, blocks, freed) for chain, size, blocks, freed, _ in chains],
                       pid=PID, start_unix_ns=start_ns, elapsed_ns=elapsed_s * S, flags=0x3 if final else 0x9)
    temporaries = {tuple(reversed(chain)): temps for chain, _, _, _, temps in chains}
    builder.paths = [(*path, temporaries[path[0]]) for path in builder.paths]
    path = directory / name
    path.write_bytes(builder.build())
    return path


def figures(outgoing: Outgoing) -> tuple[int, int, dict[tuple[str, ...], list[int]]]:
    """A push's profile's time and duration, and each stack's values
    (alloc_objects, alloc_space, inuse_objects, inuse_space,
    temp_objects)."""
    profile, samples = _decoded(outgoing.profile)
    return profile.time_nanos, profile.duration_nanos, samples


@dataclass
class FakeSender:
    """Records what is put, and the time close() gives."""
    put_: list[Outgoing] = field(default_factory=list)
    closed: list[float] = field(default_factory=list)

    def put(self, outgoing: Outgoing) -> None:
        self.put_.append(outgoing)

    def close(self, within_s: float) -> None:
        self.closed.append(within_s)


class FakeWatch:
    """A watch of a process of the test's: answers with the files queued
    in answers[pid], one a call; records what is done with it."""
    answers: dict[int, list[Path]] = {}
    refused: dict[int, str] = {}  # pid -> the MprofError's message
    events: list[tuple[str, int]] = []

    def __init__(self, pid: int, viewer: str = "top") -> None:
        assert viewer == "push"
        self.events.append(("watch", pid))
        if pid in self.refused:
            raise MprofError(self.refused[pid])
        self.pid = pid

    def ask(self) -> None:
        self.events.append(("ask", self.pid))

    def answered(self) -> Path | None:
        queued = self.answers.get(self.pid)
        return queued.pop(0) if queued else None

    def close(self) -> None:
        self.events.append(("close", self.pid))


@pytest.fixture
def watch(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[type[FakeWatch], set[int]]]:
    """The fake watch, and the set of pids running() says run."""
    kind = type("Watch", (FakeWatch,), {"answers": {}, "refused": {}, "events": []})
    alive: set[int] = set()
    monkeypatch.setattr(periodic, "Watch", kind)
    monkeypatch.setattr(periodic, "running", lambda pid: pid in alive)
    yield kind, alive


def settings(every_s: float = 1.0, labels: tuple[tuple[str, str], ...] = ()) -> periodic.Settings:
    return periodic.Settings(pyroscope.target("http://server:4040"), every_s, labels)


def labels(pid: int = PID, *user: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    return (("service_name", "prog"), ("hostname", socket.gethostname()), ("program", "/bin/prog"),
            ("pid", str(pid)), *user)


def test_the_push_timeout_is_the_interval_within_half_a_second_and_ten() -> None:
    assert [settings(every).push_timeout_s for every in (0.1, 0.5, 3.0, 10.0, 60.0)] == [0.5, 0.5, 3.0, 10.0, 10.0]


def test_a_series_is_named_by_the_program_s_name_host_path_and_pid_then_the_user_s_labels() -> None:
    host = socket.gethostname()
    assert periodic.labels_of(settings(), "/usr/bin/app", 12) == (
        ("service_name", "app"), ("hostname", host), ("program", "/usr/bin/app"), ("pid", "12"))
    # A program named by no basename keeps its name; the user's labels come last, to replace any.
    assert periodic.labels_of(settings(labels=(("service_name", "svc"), ("team", "x"))), "/", 7) == (
        ("service_name", "/"), ("hostname", host), ("program", "/"), ("pid", "7"), ("service_name", "svc"),
        ("team", "x"))


# The process's allocations as each data file says them, and so each
# interval's figures (alloc objects and bytes, inuse objects and bytes,
# temporaries):
# at 1 s  a: 3 blocks of 100 bytes, 1 freed (a temporary)
# at 2 s  a: 5 blocks, 4 freed (3 temporaries); b: 2 blocks of 40 bytes
# at 3 s  (final) a: 6 blocks, 6 freed (3 temporaries); b: 2 blocks, 1 freed
FIRST = [((MAIN_A, A_MALLOC), 100, 3, 1, 1)]
SECOND = [((MAIN_A, A_MALLOC), 100, 5, 4, 3), ((MAIN_B, B_MALLOC), 40, 2, 0, 0)]
FINAL = [((MAIN_A, A_MALLOC), 100, 6, 6, 3), ((MAIN_B, B_MALLOC), 40, 2, 1, 0)]
FIRST_FIGURES = {("main", "a"): [3, 300, 2, 200, 1]}
SECOND_FIGURES = {("main", "a"): [2, 200, 1, 100, 2], ("main", "b"): [2, 80, 2, 80, 0]}
FINAL_FIGURES = {("main", "a"): [1, 100, 0, 0, 0], ("main", "b"): [0, 0, 1, 40, 0]}


def test_each_answer_is_pushed_as_its_interval_and_the_final_file_as_the_last(
        tmp_path: Path, watch: tuple[type[FakeWatch], set[int]]) -> None:
    kind, alive = watch
    alive.add(PID)
    kind.answers[PID] = [data_file(tmp_path, "1", FIRST, 1, False), data_file(tmp_path, "2", SECOND, 2, False)]
    final = data_file(tmp_path, "final", FINAL, 3, True)
    images = [periodic.Image(PID, None)]
    sender = FakeSender()
    pusher = periodic.Pusher(settings(labels=(("team", "x"),)), lambda: images, sender)  # type: ignore[arg-type]
    pusher._ask()
    pusher._take_answers()
    pusher._ask()
    pusher._take_answers()
    pusher._take_answers()  # no answer since: nothing
    assert kind.events == [("watch", PID), ("ask", PID)]  # the watch's making is its first request
    images[0] = periodic.Image(PID, str(final))
    pusher._ask()  # the final file's turn: no more asking
    assert kind.events == [("watch", PID), ("ask", PID), ("close", PID)]
    assert [outgoing.labels for outgoing in sender.put_] == [labels(PID, ("team", "x"))] * 3
    assert [figures(outgoing) for outgoing in sender.put_] == [
        (START_NS + 1 * S, 1 * S, FIRST_FIGURES), (START_NS + 2 * S, 1 * S, SECOND_FIGURES),
        (START_NS + 3 * S, 1 * S, FINAL_FIGURES)]
    pusher._ask()
    pusher._push_finals(images)
    assert len(sender.put_) == 3  # a final file is pushed once


def test_an_answer_older_than_what_was_pushed_is_not(tmp_path: Path, watch: tuple[type[FakeWatch], set[int]]) -> None:
    kind, alive = watch
    alive.add(PID)
    second = data_file(tmp_path, "2", SECOND, 2, False)
    kind.answers[PID] = [second, data_file(tmp_path, "1", FIRST, 1, False), second]
    sender = FakeSender()
    pusher = periodic.Pusher(settings(), lambda: [periodic.Image(PID, None)], sender)  # type: ignore[arg-type]
    pusher._ask()
    for _ in range(3):
        pusher._take_answers()
    # The first answer from the start; the older one, and the same one again, not at all.
    assert [figures(outgoing) for outgoing in sender.put_] == [
        (START_NS + 2 * S, 2 * S, {("main", "a"): [5, 500, 1, 100, 3], ("main", "b"): [2, 80, 2, 80, 0]})]


def test_an_answer_after_its_image_s_final_file_is_not_pushed(
        tmp_path: Path, watch: tuple[type[FakeWatch], set[int]]) -> None:
    # An exec's new image runs under the same pid: the old image's final
    # file comes, then a late answer of the old image, then the new one's.
    kind, alive = watch
    alive.add(PID)
    later = START_NS + 5 * S
    kind.answers[PID] = [data_file(tmp_path, "1", FIRST, 1, False), data_file(tmp_path, "late", SECOND, 2, False),
                         data_file(tmp_path, "new", FIRST, 1, False, later)]
    final = data_file(tmp_path, "final", SECOND, 2, True)
    images = [periodic.Image(PID, None)]
    sender = FakeSender()
    pusher = periodic.Pusher(settings(), lambda: images, sender)  # type: ignore[arg-type]
    pusher._ask()
    pusher._take_answers()
    images[:] = [periodic.Image(PID, str(final)), periodic.Image(PID, None)]
    pusher._ask()  # the final file, and an ask of the new image: the watch goes on
    pusher._take_answers()
    pusher._take_answers()
    assert kind.events == [("watch", PID), ("ask", PID)]
    assert [figures(outgoing) for outgoing in sender.put_] == [
        (START_NS + 1 * S, 1 * S, FIRST_FIGURES), (START_NS + 2 * S, 1 * S, SECOND_FIGURES),
        # The new image from its own start, b's path too.
        (later + 1 * S, 1 * S, FIRST_FIGURES)]


def test_a_final_file_that_comes_first_is_from_the_image_s_start(tmp_path: Path) -> None:
    final = data_file(tmp_path, "final", FINAL, 3, True)
    other = data_file(tmp_path, "other", FIRST, 1, True)
    sender = FakeSender()
    # Running images are no business of _push_finals.
    images = [periodic.Image(PID + 2, None), periodic.Image(PID, str(final)), periodic.Image(PID + 1, str(other))]
    pusher = periodic.Pusher(settings(), lambda: images, sender)  # type: ignore[arg-type]
    pusher._push_finals(images)
    assert [(outgoing.labels, figures(outgoing)) for outgoing in sender.put_] == [
        (labels(PID), (START_NS + 3 * S, 3 * S, {("main", "a"): [6, 600, 0, 0, 3], ("main", "b"): [2, 80, 1, 40, 0]})),
        (labels(PID + 1), (START_NS + 1 * S, 1 * S, FIRST_FIGURES))]
    # Those pushed are not again; one that comes after them is.
    images.append(periodic.Image(PID + 3, str(other)))
    pusher._push_finals(images)
    assert [outgoing.labels for outgoing in sender.put_[2:]] == [labels(PID + 3)]


def test_an_unreadable_file_is_said_once_and_not_pushed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        watch: tuple[type[FakeWatch], set[int]]) -> None:
    kind, alive = watch
    alive.add(PID)
    broken = tmp_path / "broken"
    broken.write_bytes(b"MPROFDAT")
    kind.answers[PID] = [broken, broken]
    sender = FakeSender()
    pusher = periodic.Pusher(settings(), lambda: [periodic.Image(PID, None)], sender)  # type: ignore[arg-type]
    pusher._ask()
    pusher._take_answers()
    pusher._take_answers()
    assert sender.put_ == []
    err = capsys.readouterr().err
    assert err.startswith(f"mprof: push: {broken}: ")
    assert err.count("\n") == 1


def test_a_process_that_cannot_be_watched_is_said_once_and_one_gone_not_at_all(
        capsys: pytest.CaptureFixture[str], watch: tuple[type[FakeWatch], set[int]]) -> None:
    kind, alive = watch
    alive.update({PID, PID + 1})
    kind.refused = {PID: "process 4242: is not dumpable", PID + 1: "process 4243: gone"}
    images = [periodic.Image(PID, None), periodic.Image(PID + 1, None), periodic.Image(PID + 2, None)]
    pusher = periodic.Pusher(settings(), lambda: images, FakeSender())  # type: ignore[arg-type]
    original = kind.__init__

    def ends_meanwhile(self: FakeWatch, pid: int, viewer: str = "top") -> None:
        if pid == PID + 1:
            alive.discard(PID + 1)  # it ended as it was asked
        original(self, pid, viewer)

    kind.__init__ = ends_meanwhile  # type: ignore[method-assign]
    pusher._ask()
    pusher._take_answers()  # none from processes without a watch
    pusher._ask()
    # PID + 2 never ran; PID + 1 was gone by the time it was refused.
    assert kind.events == [("watch", PID), ("watch", PID + 1), ("watch", PID)]
    assert capsys.readouterr().err == "mprof: push: process 4242: is not dumpable; it is not pushed while it runs\n"


class _Clock:
    """periodic's time and select: select says the descriptor readable
    after ends_after calls; each call moves the clock to its next time."""

    def __init__(self, times: list[float], ends_after: int) -> None:
        self.times = times
        self.now = times.pop(0)
        self.selects = 0
        self.ends_after = ends_after

    def monotonic(self) -> float:
        return self.now

    def select(self, read: list[int], write: list[int], error: list[int], timeout: float) -> tuple[list[int], ...]:
        # A wait of _POLL_S for the descriptor alone: the answers are
        # looked for in between.
        assert (write, error, timeout) == ([], [], periodic._POLL_S)
        self.selects += 1
        assert self.selects <= self.ends_after + 1, "select() after the descriptor was readable"
        if self.selects > self.ends_after:
            return read, [], []
        self.now = self.times.pop(0)
        return [], [], []


def test_run_asks_every_interval_skips_the_asks_it_was_late_for_and_pushes_the_finals_at_the_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: tuple[type[FakeWatch], set[int]]) -> None:
    kind, alive = watch
    alive.add(PID)
    final = data_file(tmp_path, "final", FINAL, 3, True)
    # Every 2 s from 100: the asks due at 102, then 104 (made at 106.5:
    # late), then 108, the one due at 106 not made up for.
    clock = _Clock([100.0, 101.0, 102.0, 103.9, 106.5, 107.9, 108.0, 109.9], ends_after=7)
    monkeypatch.setattr(periodic, "time", SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(periodic, "select", SimpleNamespace(select=clock.select))
    asked: list[float] = []

    def images() -> list[periodic.Image]:
        asked.append(clock.now)
        return [periodic.Image(PID, None if clock.selects <= 7 else str(final))]

    sender = FakeSender()
    read, write = os.pipe()
    try:
        periodic.Pusher(settings(every_s=2.0), images, sender).run(read)  # type: ignore[arg-type]
    finally:
        os.close(read)
        os.close(write)
    assert asked == [102.0, 106.5, 108.0, 109.9]  # the last at the end
    assert kind.events == [("watch", PID), ("ask", PID), ("ask", PID), ("close", PID)]
    assert [figures(outgoing) for outgoing in sender.put_] == [
        (START_NS + 3 * S, 3 * S, {("main", "a"): [6, 600, 0, 0, 3], ("main", "b"): [2, 80, 1, 40, 0]})]
    assert sender.closed == [2.0]


def test_run_closes_the_watches_it_left_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            watch: tuple[type[FakeWatch], set[int]]) -> None:
    kind, alive = watch
    alive.add(PID)
    kind.answers[PID] = [data_file(tmp_path, "1", FIRST, 1, False)]
    clock = _Clock([0.0, 20.0], ends_after=1)
    monkeypatch.setattr(periodic, "time", SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(periodic, "select", SimpleNamespace(select=clock.select))
    sender = FakeSender()
    # The program's command ended before the program: no final file.
    periodic.Pusher(settings(every_s=15.0), lambda: [periodic.Image(PID, None)], sender).run(  # type: ignore[arg-type]
        0)
    assert kind.events == [("watch", PID), ("close", PID)]
    # The answer that came after the last ask is pushed too.
    assert [figures(outgoing) for outgoing in sender.put_] == [(START_NS + 1 * S, 1 * S, FIRST_FIGURES)]
    assert sender.closed == [10.0]


@pytest.mark.slow
def test_the_pushes_go_to_the_server_of_the_settings(
        tmp_path: Path, recorder: tuple[str, type[_Recorder]],  # noqa: F811 (the fixture)
        capsys: pytest.CaptureFixture[str]) -> None:
    url, handler = recorder
    final = data_file(tmp_path, "final", FIRST, 1, True)
    read, write = os.pipe()
    os.close(write)  # the program has ended
    try:
        periodic.Pusher(periodic.Settings(pyroscope.target(url), 1.0, ()),
                        lambda: [periodic.Image(PID, str(final))]).run(read)
    finally:
        os.close(read)
    [(path, _, body)] = handler.requests
    assert path == "/push.v1.PusherService/Push"
    [series] = json.loads(body)["series"]
    assert series["labels"] == [{"name": name, "value": value} for name, value in sorted(
        (("__delta__", "false"), ("__name__", "memory"), *labels()))]
    profile = base64.b64decode(series["samples"][0]["rawProfile"])
    assert figures(Outgoing((), profile)) == (START_NS + 1 * S, 1 * S, FIRST_FIGURES)
    assert capsys.readouterr().err == ""


def test_a_process_s_watch_ends_with_its_last_running_image(
        tmp_path: Path, watch: tuple[type[FakeWatch], set[int]]) -> None:
    kind, alive = watch
    alive.update({PID, PID + 1})
    images = [periodic.Image(PID, None), periodic.Image(PID + 1, None)]
    sender = FakeSender()
    pusher = periodic.Pusher(settings(), lambda: images, sender)  # type: ignore[arg-type]
    pusher._ask()
    # PID ends while PID + 1 runs on: PID's watch alone is closed.
    images[0] = periodic.Image(PID, str(data_file(tmp_path, "final", FIRST, 1, True)))
    pusher._ask()
    assert kind.events == [("watch", PID), ("watch", PID + 1), ("close", PID), ("ask", PID + 1)]
    # An exec's image of PID listed only now: watched afresh.
    images.append(periodic.Image(PID, None))
    pusher._ask()
    assert kind.events[4:] == [("ask", PID + 1), ("watch", PID)]
    assert [outgoing.labels for outgoing in sender.put_] == [labels(PID)]


def test_an_image_s_final_file_is_read_once_and_nothing_of_it_pushed_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: tuple[type[FakeWatch], set[int]]) -> None:
    kind, alive = watch
    alive.add(PID)
    read: list[Path] = []
    real = periodic.profile_of_snapshot

    def counted(path: Path) -> object:
        read.append(path)
        return real(path)

    monkeypatch.setattr(periodic, "profile_of_snapshot", counted)
    final = data_file(tmp_path, "final", FIRST, 1, True)
    # An answer of the ended image, timed after its final file (clocks
    # apart): the image is over all the same.
    kind.answers[PID] = [data_file(tmp_path, "2", SECOND, 2, False)]
    images = [periodic.Image(PID, str(final)), periodic.Image(PID, None)]
    sender = FakeSender()
    pusher = periodic.Pusher(settings(), lambda: images, sender)  # type: ignore[arg-type]
    pusher._ask()
    pusher._take_answers()
    pusher._ask()
    pusher._push_finals(images)
    assert read == [final, tmp_path / "2"]
    assert [figures(outgoing) for outgoing in sender.put_] == [(START_NS + 1 * S, 1 * S, FIRST_FIGURES)]
