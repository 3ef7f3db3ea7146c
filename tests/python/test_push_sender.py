"""What the pushes send over HTTP, to a server of the test's own that
records each request, and how the sender retries, drops and says so."""

from __future__ import annotations

import argparse
import base64
import dataclasses
import gzip
import http.server
import json
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from mprof.cli import pushing
from mprof.export import profile_pb2
from mprof.push import interval
from mprof.push import sender as sending
from mprof.push import target as pyroscope
from mprof.reducer.errors import MprofError
from mprof.report.model import Model, PathRow
from test_flame import MAIN, NAMES, A, B, W, path_model


class _Recorder(http.server.BaseHTTPRequestHandler):
    answers: list[int] = []
    requests: list[tuple[str, dict[str, str], bytes]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.requests.append((self.path, dict(self.headers), body))
        status = self.answers.pop(0) if self.answers else 200
        text = b"{}" if status == 200 else json.dumps({"code": "invalid_argument", "message": "too\nold"}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        # Recorded too: a push is never one.
        self.requests.append((self.path, dict(self.headers), b""))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, type[_Recorder]]]:
    handler = type("Handler", (_Recorder,), {"answers": [], "requests": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_a_push_is_the_push_api_request_with_labels_and_the_profile(recorder: tuple[str, type[_Recorder]]) -> None:
    url, handler = recorder
    profile = gzip.compress(b"not looked at by the client")
    to = pyroscope.target(f"http://user%40x:p%3Ass@{url.removeprefix('http://')}/base/")
    assert to.shown == f"{url}/base"
    pyroscope.send(to, [("service_name", "svc"), ("team", "a b"), ("__name__", "ignored")], profile, 5)
    [(path, headers, body)] = handler.requests
    assert path == "/base/push.v1.PusherService/Push"
    assert headers["Content-Type"] == "application/json"
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"user@x:p:ss").decode()
    request = json.loads(body)
    [series] = request["series"]
    # The user's labels replace any of mprof's but none of the server's own.
    assert series["labels"] == [{"name": "__delta__", "value": "false"}, {"name": "__name__", "value": "ignored"},
                                {"name": "service_name", "value": "svc"}, {"name": "team", "value": "a b"}]
    [sample] = series["samples"]
    assert base64.b64decode(sample["rawProfile"]) == profile
    assert len(sample["ID"]) == 36


@pytest.mark.slow
def test_a_refusal_says_the_servers_words_in_one_line(recorder: tuple[str, type[_Recorder]]) -> None:
    url, handler = recorder
    handler.answers += [400]
    with pytest.raises(pyroscope.PushFailed) as failure:
        pyroscope.send(pyroscope.target(url), [], b"", 5)
    assert str(failure.value) == "the server answered 400 Bad Request: too old"
    assert failure.value.lasting
    handler.answers += [503, 503, 503]
    with pytest.raises(MprofError) as error:
        pyroscope.send_now(pyroscope.target(url), [], b"", 5, pause_s=0)
    assert str(error.value) == f"push to {url} failed: the server answered 503 Service Unavailable: too old"
    assert len(handler.requests) == 4  # a lasting refusal is not sent again; a passing one twice more


@pytest.mark.parametrize("url", ["ftp://host", "http://", "host:4040", "http://host:99999", "http://h/?q=1"])
def test_what_is_not_a_server_url_is_refused(url: str) -> None:
    with pytest.raises(MprofError):
        pyroscope.target(url)


@pytest.mark.parametrize(("url", "said"), [
    ("http://h:1/a b", "--push http://h:1/a b: a URL holds no spaces or control characters (write a space as %20)"),
    ("http://h:1\x1b[2J", "--push http://h:1\\x1b[2J: a URL holds no spaces or control characters (write a space "
                          "as %20)"),
    ("http://user:s3cr3t@h:99999", "--push http://user:***@h:99999: not a URL: its port is not a number from 1 to "
                                   "65535"),
    ("http://user:s3cr3t@h:0", "--push http://user:***@h:0: not a URL: its port is not a number from 1 to 65535"),
    # A / in the password ends urllib's host: what it took for a port is the password's start.
    ("http://user:s3/cr3t@h", "--push http://user:***@h: not a URL: its port is not a number from 1 to 65535"),
    ("ftp://user:s3cr3t@h", "--push ftp://user:***@h: not an http:// or https:// URL of a server"),
    ("http://user:s3 cr3t@h", "--push http://user:***@h: a URL holds no spaces or control characters (write a space "
                              "as %20)"),
    ("http://user:s3cr3t@h/?q", "--push http://user:***@h/?q: the server's URL takes no query or fragment"),
])
def test_a_refused_url_is_named_in_one_line_without_its_password(url: str, said: str) -> None:
    with pytest.raises(MprofError) as error:
        pyroscope.target(url)
    assert str(error.value) == said


def test_a_path_beyond_ascii_is_sent_percent_encoded() -> None:
    to = pyroscope.target("https://u:p@h:4040/grafana/pyroscope-été/")
    assert to.endpoint == "https://h:4040/grafana/pyroscope-%C3%A9t%C3%A9/push.v1.PusherService/Push"
    assert to.shown == "https://h:4040/grafana/pyroscope-%C3%A9t%C3%A9"


@pytest.mark.parametrize("text", ["team=a\x1b[31mred", "team=a\nb", "team=\x7f", "team=\x85", "team=\udcff"])
def test_a_label_with_a_control_character_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as error:
        pushing.label(text)
    assert str(error.value) == f"{text!r}: a label's value is UTF-8 text without control characters"


def test_a_label_of_any_printable_text_is_taken() -> None:
    assert pushing.label("team=caf\u00e9 \u540d\u524d\u00a0x") == ("team", "caf\u00e9 \u540d\u524d\u00a0x")


class _RawServer:
    """A server of the test's own, on a thread: it reads each request and
    answers with what answer(server, connection) writes, counting the
    bytes; for servers no HTTP library would write."""

    def __init__(self, answer: Callable[[_RawServer, socket.socket], None]) -> None:
        self._answer = answer
        self._listening = socket.create_server(("127.0.0.1", 0))
        self._listening.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._listening.getsockname()[1]}"
        self.stop = threading.Event()
        self.written = 0
        self.answered = threading.Event()  # an answer is over: written, or cut off by the client
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                connection, _ = self._listening.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(None)
                request = b""
                while b"\r\n\r\n" not in request:
                    request += connection.recv(65536)
                head, _, body = request.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length:")))
                while len(body) < length:
                    body += connection.recv(65536)
                try:
                    self._answer(self, connection)
                except OSError:
                    pass  # the client closed it: what this test is about
                self.answered.set()

    def write(self, connection: socket.socket, data: bytes) -> None:
        connection.sendall(data)
        self.written += len(data)

    def close(self) -> None:
        self.stop.set()
        self._thread.join(30)
        self._listening.close()


@pytest.fixture
def raw_server() -> Iterator[Callable[[Callable[[_RawServer, socket.socket], None]], _RawServer]]:
    made: list[_RawServer] = []

    def make(answer: Callable[[_RawServer, socket.socket], None]) -> _RawServer:
        made.append(_RawServer(answer))
        return made[-1]

    yield make
    for server in made:
        server.close()


def _trickled(data: bytes) -> Callable[[_RawServer, socket.socket], None]:
    """An answer of data, a byte every 20 ms: no socket operation of the
    client's waits a second, and the whole takes far longer."""
    def answer(server: _RawServer, connection: socket.socket) -> None:
        for byte in data:
            if server.stop.is_set():
                return
            server.write(connection, bytes([byte]))
            time.sleep(0.02)
    return answer


def _sent_within(to: pyroscope.Target, timeout_s: float) -> BaseException | None:
    """send()'s failure, or None; a send still under way after 60 s (the
    time the push was given, and a wide margin for a loaded machine) fails
    the test."""
    outcome: list[BaseException | None] = []

    def send() -> None:
        try:
            pyroscope.send(to, [("service_name", "s")], b"profile", timeout_s)
            outcome.append(None)
        except pyroscope.PushFailed as failure:
            outcome.append(failure)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    thread.join(60)
    assert outcome, "send() was still waiting for the server after 60 s"
    return outcome[0]


@pytest.mark.slow
@pytest.mark.parametrize("answer", [
    # Headers that never end, and a refusal whose text never ends.
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"X-Pad: a\r\n" * 100_000,
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 2048\r\n\r\n" + b"x" * 2048,
], ids=["headers", "refusal"])
def test_a_server_that_answers_a_byte_at_a_time_has_the_push_s_time_in_all(
        raw_server: Callable[[Callable[[_RawServer, socket.socket], None]], _RawServer], answer: bytes) -> None:
    server = raw_server(_trickled(answer))
    failure = _sent_within(pyroscope.target(server.url), 1.0)
    assert str(failure) == "no answer within 1 s"
    assert isinstance(failure, pyroscope.PushFailed) and not failure.lasting
    # The connection was shut down at the deadline: the server's next
    # writes fail, long before the 41 s the shorter answer takes.
    assert server.answered.wait(20)


def _huge(status: bytes) -> Callable[[_RawServer, socket.socket], None]:
    """An answer of status with a body of 256 MiB, as fast as the client
    takes it."""
    def answer(server: _RawServer, connection: socket.socket) -> None:
        server.write(connection, b"HTTP/1.1 " + status + b"\r\nContent-Length: %d\r\n\r\n" % (256 << 20))
        chunk = b"x" * (1 << 16)
        for _ in range(256 << 4):
            server.write(connection, chunk)
    return answer


@pytest.mark.slow
@pytest.mark.parametrize(("status", "failure"), [
    (b"200 OK", None),
    (b"400 Bad Request", "the server answered 400 Bad Request: " + "x" * 200 + "..."),
])
def test_an_answer_s_body_is_read_no_further_than_its_first_bytes(
        raw_server: Callable[[Callable[[_RawServer, socket.socket], None]], _RawServer], status: bytes,
        failure: str | None) -> None:
    server = raw_server(_huge(status))
    outcome = _sent_within(pyroscope.target(server.url), 30.0)
    assert (outcome if outcome is None else str(outcome)) == failure
    assert server.answered.wait(60)  # the server's writes fail once the client has closed the connection
    # What the loopback's socket buffers take (a few MiB), not the 256 MiB.
    assert server.written < 64 << 20, server.written


@pytest.mark.slow
def test_a_redirection_is_an_answer_not_followed(recorder: tuple[str, type[_Recorder]],
                                                 raw_server: Callable[[Callable[[_RawServer, socket.socket], None]],
                                                                      _RawServer]) -> None:
    elsewhere, handler = recorder

    def redirect(server: _RawServer, connection: socket.socket) -> None:
        server.write(connection, b"HTTP/1.1 302 Found\r\nLocation: %s/stolen\r\nContent-Length: 0\r\n\r\n"
                     % elsewhere.encode())

    server = raw_server(redirect)
    failure = _sent_within(pyroscope.target(server.url.replace("http://", "http://user:pass@")), 30.0)
    assert str(failure) == "the server answered 302 Found"
    assert isinstance(failure, pyroscope.PushFailed) and failure.lasting
    # Neither the profile nor the credentials went to where it pointed.
    assert handler.requests == []


class _Fake:
    """A send() that fails while told to, and records what it was given."""

    def __init__(self, failures: list[str | None]) -> None:
        self.failures = failures
        self.sent: list[bytes] = []
        self.tries = 0

    def __call__(self, to: pyroscope.Target, labels: Sequence[tuple[str, str]], profile: bytes,
                 timeout_s: float) -> None:
        self.tries += 1
        failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            raise pyroscope.PushFailed(failure, lasting=failure == "refused")
        self.sent.append(profile)


def test_the_server_s_words_are_said_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _Fake(["the server answered 400 Bad \x1b[5mRequest: \x1b]0;owned\x07\x1b[2Jtoo old\\x1b"] * 3)
    said: list[str] = []
    sender = _sender(fake, said, monkeypatch)
    sender.put(_outgoing(0))
    sender.close(5)
    assert said == ["push to http://server:4040 failed: the server answered 400 Bad \\x1b[5mRequest: "
                    "\\x1b]0;owned\\x07\\x1b[2Jtoo old\\\\x1b; profiles are dropped until it works again",
                    "push to http://server:4040: 1 profile of the run could not be sent, and was dropped"]


def _sender(fake: _Fake, said: list[str], monkeypatch: pytest.MonkeyPatch) -> sending.Sender:
    monkeypatch.setattr(sending, "RETRY_PAUSES_S", (0.01, 0.01))
    return sending.Sender(pyroscope.target("http://server:4040"), 1.0, said.append, fake)


def _outgoing(n: int) -> sending.Outgoing:
    return sending.Outgoing((("pid", "1"),), bytes([n]))


def test_a_failure_is_retried_then_dropped_and_said_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first profile fails all three tries, the second twice, the third
    # is refused for good, the fourth goes at once.
    fake = _Fake(["down"] * 5 + [None, "refused"])
    said: list[str] = []
    sender = _sender(fake, said, monkeypatch)
    for n in range(4):
        sender.put(_outgoing(n))
    sender.close(5)
    assert fake.sent == [bytes([1]), bytes([3])]
    assert fake.tries == 3 + 3 + 1 + 1
    assert said == ["push to http://server:4040 failed: down; profiles are dropped until it works again",
                    "push to http://server:4040 works again; 1 profile was dropped meanwhile",
                    "push to http://server:4040 failed: refused; profiles are dropped until it works again",
                    "push to http://server:4040 works again; 1 profile was dropped meanwhile"]


def test_what_is_left_at_the_end_is_dropped_within_the_time_given(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _Fake(["down"] * 100)
    said: list[str] = []
    sender = _sender(fake, said, monkeypatch)
    monkeypatch.setattr(sending, "RETRY_PAUSES_S", (60.0, 60.0))  # only the end cuts the pauses short
    for n in range(3):
        sender.put(_outgoing(n))
    started = time.monotonic()
    sender.close(0.5)
    assert time.monotonic() - started < 20  # not the 60 s pause: a margin wide enough for a loaded machine
    assert fake.sent == []
    assert said == ["push to http://server:4040 failed: down; profiles are dropped until it works again",
                    "push to http://server:4040: 3 profiles of the run could not be sent, and were dropped"]


def test_the_oldest_waiting_profile_makes_room(monkeypatch: pytest.MonkeyPatch) -> None:
    gate, under_way = threading.Event(), threading.Event()
    sent: list[bytes] = []

    def held(to: pyroscope.Target, labels: Sequence[tuple[str, str]], profile: bytes, timeout_s: float) -> None:
        under_way.set()
        gate.wait()
        sent.append(profile)

    said: list[str] = []
    sender = sending.Sender(pyroscope.target("http://server:4040"), 1.0, said.append, held)
    sender.put(_outgoing(0))
    assert under_way.wait(5)
    for n in range(1, sending.MOST_WAITING + 3):
        sender.put(_outgoing(n))
    gate.set()
    sender.close(5)
    # The first was under way; of the rest the newest MOST_WAITING were kept.
    assert sent == [bytes([0]), *(bytes([n]) for n in range(3, sending.MOST_WAITING + 3))]
    assert sender.sent == len(sent)
    assert said[0] == "push to http://server:4040 failed: the server fell behind; profiles are dropped until it " \
                      "works again"


class _Paused(threading.Event):
    """The sender's close() event, whose waits (a retry's pauses) are
    recorded in events beside the tries, and return at once."""

    def __init__(self, events: list[tuple[str, object]]) -> None:
        super().__init__()
        self._events = events

    def wait(self, timeout: float | None = None) -> bool:
        self._events.append(("pause", timeout))
        return self.is_set()


@pytest.mark.parametrize(("failures", "expected", "sent"), [
    # Three tries of the first, a pause between each two and none after
    # the last: the second goes at once.
    (["down"] * 3, [("send", 0), ("pause", 1.0), ("send", 0), ("pause", 3.0), ("send", 0), ("send", 1)], [1]),
    # Sent on its second try: one pause.
    (["down"], [("send", 0), ("pause", 1.0), ("send", 0), ("send", 1)], [0, 1]),
    # Refused for good: not tried again, no pause.
    (["refused"], [("send", 0), ("send", 1)], [1]),
], ids=["dropped", "retried", "refused"])
def test_a_retry_pauses_before_each_try_again_and_never_after_the_last(
        failures: list[str | None], expected: list[tuple[str, object]], sent: list[int]) -> None:
    events: list[tuple[str, object]] = []
    fake = _Fake(list(failures))

    def send(to: pyroscope.Target, labels: Sequence[tuple[str, str]], profile: bytes, timeout_s: float) -> None:
        events.append(("send", profile[0]))
        fake(to, labels, profile, timeout_s)

    said: list[str] = []
    sender = sending.Sender(pyroscope.target("http://server:4040"), 1.0, said.append, send)
    sender._closed = _Paused(events)  # before anything is put: the sender's thread waits for a profile
    sender.put(_outgoing(0))
    sender.put(_outgoing(1))
    # close()'s time is far beyond the pauses, which it would shorten.
    sender.close(600)
    assert events == expected
    assert fake.sent == [bytes([n]) for n in sent]


@pytest.mark.slow
@pytest.mark.parametrize("waiting", [0, 2])
def test_a_send_that_overruns_close_is_counted_dropped(waiting: int) -> None:
    gate, under_way = threading.Event(), threading.Event()

    def held(to: pyroscope.Target, labels: Sequence[tuple[str, str]], profile: bytes, timeout_s: float) -> None:
        under_way.set()
        gate.wait(600)

    said: list[str] = []
    sender = sending.Sender(pyroscope.target("http://server:4040"), 1.0, said.append, held)
    sender.put(_outgoing(0))
    assert under_way.wait(60)
    for n in range(waiting):
        sender.put(_outgoing(1 + n))
    try:
        sender.close(0.1)  # returns with the first send still under way
        assert sender.sent == 0
    finally:
        gate.set()
    dropped = 1 + waiting
    assert said == [f"push to http://server:4040: {dropped} {'profile' if dropped == 1 else 'profiles'} of the run "
                    f"could not be sent, and {'was' if dropped == 1 else 'were'} dropped"]


def _decoded(data: bytes) -> tuple[profile_pb2.Profile, dict[tuple[str, ...], list[int]]]:
    """The profile, and each sample's values by its stack, outermost first."""
    profile = profile_pb2.Profile.FromString(gzip.decompress(data))
    names = {function.id: profile.string_table[function.name] for function in profile.function}
    frames = {location.id: [names[line.function_id] for line in location.line] for location in profile.location}
    samples = {tuple(reversed([name for location in sample.location_id for name in frames[location]])):
               list(sample.value) for sample in profile.sample}
    return profile, samples


def test_an_interval_is_the_difference_of_two_snapshots_and_what_is_live() -> None:
    # Two reductions of one process: its paths numbered afresh (b's first
    # in the second), a's figures grown, b new.
    first = path_model(NAMES, [((MAIN, A), 100, 0, "")])
    second = path_model(NAMES, [((MAIN, B), 50, 0, ""), ((MAIN, A), 300, 100, "")])
    first.runs[0] = dataclasses.replace(first.runs[0], start_unix_ns=10**18, elapsed_ns=2 * 10**9)
    second.runs[0] = dataclasses.replace(second.runs[0], start_unix_ns=10**18, elapsed_ns=5 * 10**9)
    keys = interval.PathKeys()
    data, since = interval.interval_profile(first, keys, None)
    profile, samples = _decoded(data)
    assert (profile.time_nanos, profile.duration_nanos, profile.period) == (10**18 + 2 * 10**9, 2 * 10**9, 1)
    strings = profile.string_table
    assert [(strings[t.type], strings[t.unit]) for t in profile.sample_type] == [
        ("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_objects", "count"), ("inuse_space", "bytes"),
        ("temp_objects", "count")]
    assert (strings[profile.period_type.type], strings[profile.period_type.unit]) == ("space", "bytes")
    assert strings[profile.default_sample_type] == "inuse_space"
    assert samples == {("main", "a"): [1, 100, 1, 100, 0]}

    data, _ = interval.interval_profile(second, keys, since)
    profile, samples = _decoded(data)
    assert (profile.time_nanos, profile.duration_nanos) == (10**18 + 5 * 10**9, 3 * 10**9)
    # a allocated 200 bytes more in no new block (path_model's one block a
    # path), and freed 100; b is new.
    assert samples == {("main", "a"): [0, 200, 0, 200, 0], ("main", "b"): [1, 50, 1, 50, 0]}

    # A new image (an exec) counts from its own start.
    second.runs[0] = dataclasses.replace(second.runs[0], start_unix_ns=10**18 + 10**9)
    _, samples = _decoded(interval.interval_profile(second, keys, since)[0])
    assert samples == {("main", "a"): [1, 300, 0, 200, 0], ("main", "b"): [1, 50, 1, 50, 0]}


def test_a_whole_run_is_one_interval_of_no_sample_labels() -> None:
    model = path_model(NAMES, [((MAIN, A), 100, 0, ""), ((MAIN, W), 4096, 0, "stdio buffer")])
    model.runs[0] = dataclasses.replace(model.runs[0], start_unix_ns=7 * 10**9, elapsed_ns=3 * 10**9)
    profile, samples = _decoded(interval.whole_run_profile(model))
    assert (profile.time_nanos, profile.duration_nanos) == (10 * 10**9, 3 * 10**9)
    assert samples == {("main", "a"): [1, 100, 1, 100, 0], ("main", "w"): [1, 4096, 1, 4096, 0]}
    assert not any(sample.label for sample in profile.sample)  # a server would make a series of each


class _Clock:
    """The sender's time.monotonic, moved on by the tries and pauses."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class _Timed(threading.Event):
    """The sender's close() event, whose waits (a retry's pauses) are
    recorded in events and move the clock on by the pause."""

    def __init__(self, events: list[tuple[str, object]], clock: _Clock) -> None:
        super().__init__()
        self._events = events
        self._clock = clock

    def wait(self, timeout: float | None = None) -> bool:
        self._events.append(("pause", timeout))
        self._clock.now += timeout or 0
        return self.is_set()


def _timed_sender(monkeypatch: pytest.MonkeyPatch, failures: list[str | None], send_s: float
                  ) -> tuple[sending.Sender, _Clock, list[tuple[str, object]]]:
    """A sender of timeout 4 s on the clock, whose sends fail as failures
    say, each taking send_s; its tries and pauses are recorded in events,
    with the timeout each try was given.  Its thread never takes a profile:
    the test calls _try() itself, and sets the close()'s deadline."""
    clock = _Clock()
    monkeypatch.setattr(sending, "time", argparse.Namespace(monotonic=clock.monotonic))
    events: list[tuple[str, object]] = []
    fake = _Fake(failures)

    def send(to: pyroscope.Target, labels: Sequence[tuple[str, str]], profile: bytes, timeout_s: float) -> None:
        events.append(("send", timeout_s))
        clock.now += send_s
        fake(to, labels, profile, timeout_s)

    sender = sending.Sender(pyroscope.target("http://server:4040"), 4.0, lambda line: None, send)
    sender._closed = _Timed(events, clock)
    return sender, clock, events


def test_a_try_has_the_push_s_timeout_until_the_end_then_what_is_left_of_the_end_s(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sender, clock, events = _timed_sender(monkeypatch, [], 0.0)
    try:
        assert sender._try(_outgoing(0)) is None
        sender._closing_by = clock.now + 2.5
        assert sender._try(_outgoing(1)) is None
        clock.now = sender._closing_by - 0.01
        assert sender._try(_outgoing(2)) is None  # a last chance, however short
        clock.now = sender._closing_by
        assert sender._try(_outgoing(3)) == "the run ended before it could be sent"
        assert events == [("send", 4.0), ("send", 2.5), ("send", 0.05)]
    finally:
        sender.close(0)


def test_a_retry_s_pause_and_try_are_cut_short_by_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each try takes 1 s and fails; the end is 2.5 s away.
    sender, clock, events = _timed_sender(monkeypatch, ["down", "cut"], 1.0)
    try:
        sender._closing_by = clock.now + 2.5
        assert sender._try(_outgoing(0)) == "cut"  # the last failure's reason
        assert events == [("send", 2.5), ("pause", 1.0), ("send", 0.5), ("pause", 0)]
    finally:
        sender.close(0)


def test_a_url_s_host_port_path_and_user_as_sent() -> None:
    assert pyroscope.target("http://[::1]:4040//") == pyroscope.Target(
        "http://[::1]:4040/push.v1.PusherService/Push", "http://[::1]:4040", None)
    # A user without a password has an empty one; no port is the scheme's.
    assert pyroscope.target("http://user@h") == pyroscope.Target(
        "http://h/push.v1.PusherService/Push", "http://h", "Basic " + base64.b64encode(b"user:").decode())
    # Only the path's last slashes go.
    assert pyroscope.target("http://h/boX//").endpoint == "http://h/boX/push.v1.PusherService/Push"
    # What the user encoded stays as it is.
    assert pyroscope.target("https://h:443/a%20b/") == pyroscope.Target(
        "https://h:443/a%20b/push.v1.PusherService/Push", "https://h:443/a%20b", None)


@pytest.mark.parametrize(("url", "shown"), [
    ("http://user@h", "http://user@h"),  # no password to hide
    ("user:pass@h", "user:pass@h"),  # no scheme: not a URL that is shown hidden
    ("http://u:p/x@y@h:1", "http://u:***@h:1"),  # up to the last @
    ("http://u:p@h/a://b", "http://u:***@h/a://b"),  # from the first ://
    ("http://u:p:w@h", "http://u:***@h"),  # from the user's colon
])
def test_a_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert pyroscope._hidden(url) == shown


@pytest.mark.parametrize(("body", "said"), [
    (b'{"code": "invalid_argument", "message": "too\\n  old"}', ": too old"),
    (b'{"code": "unknown"}', ""),  # no message
    (b"[1, 2]", ": [1, 2]"),  # JSON, not Connect's: the text as it is
    (b"bad gateway\r\n  from the proxy", ": bad gateway from the proxy"),
    (b"x" * 300, ": " + "x" * 200 + "..."),
    (b"x" * 200, ": " + "x" * 200),  # 200 characters in all: as it is
    (b"", ""),
    (b"caf\xc3\xa9 \xff", ": caf\u00e9 \ufffd"),
])
def test_what_the_server_said_of_a_refusal_is_one_short_line(body: bytes, said: str) -> None:
    assert pyroscope._said(body) == said


@pytest.mark.parametrize(("error", "reason"), [
    (TimeoutError(), "no answer within 1.3 s"),
    (urllib.error.URLError(TimeoutError()), "no answer within 1.3 s"),
    (urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")), "Connection refused"),
    (urllib.error.URLError("unknown url type:\n  htp"), "unknown url type: htp"),
    (http.client.RemoteDisconnected(), "RemoteDisconnected"),  # no words: its kind
    # The first 200 characters.
    (http.client.LineTooLong("header " + "x" * 300),
     ("got more than 65536 bytes when reading header " + "x" * 300)[:200] + "..."),
])
def test_why_there_was_no_answer_is_one_line(error: BaseException, reason: str) -> None:
    assert pyroscope._reason(error, 1.26) == reason


@pytest.mark.slow
def test_a_refusal_is_lasting_unless_it_may_pass(recorder: tuple[str, type[_Recorder]]) -> None:
    url, handler = recorder
    # 408 and 429 ask to come back later, a 5xx may pass; any other 4xx is
    # of this profile.
    codes = [400, 404, 408, 413, 429, 500, 502, 503]
    handler.answers += codes
    lasting = []
    for _ in codes:
        with pytest.raises(pyroscope.PushFailed) as failure:
            pyroscope.send(pyroscope.target(url), [], b"", 5)
        lasting.append(failure.value.lasting)
    assert lasting == [True, True, False, True, False, False, False, False]
    # Without credentials no Authorization; mprof says who it is.
    assert [(path, headers.get("Authorization"), headers["User-Agent"]) for path, headers, _ in handler.requests] \
        == [("/push.v1.PusherService/Push", None, "mprof")] * len(codes)


def _timed(model: Model, start_ns: int, elapsed_ns: int) -> Model:
    model.runs[0] = dataclasses.replace(model.runs[0], start_unix_ns=start_ns, elapsed_ns=elapsed_ns)
    return model


def test_paths_of_the_same_frames_are_one_whose_first_row_carries_both() -> None:
    # Two nodes of two functions of one name, module, file and line: the
    # same frames, as two reductions could not tell apart.
    # The path after them goes on as any.
    model = path_model({MAIN: "main", A: "a", B: "a", W: "w"},
                       [((MAIN, A), 100, 0, ""), ((MAIN, B), 50, 0, ""), ((MAIN, W), 70, 0, "")])
    data, since = interval.interval_profile(model, interval.PathKeys(), None)
    assert sorted(since.by_path.values()) == [(1, 70, 1, 70, 0), (2, 150, 2, 150, 0)]
    profile, samples = _decoded(data)
    assert samples == {("main", "a"): [2, 150, 2, 150, 0], ("main", "w"): [1, 70, 1, 70, 0]}
    assert len(profile.sample) == 2  # the second row's zeros are no sample


def test_a_runtime_s_blocks_are_a_path_apart_from_the_program_s_own() -> None:
    keys = interval.PathKeys()
    first = _timed(path_model(NAMES, [((MAIN, W), 100, 0, "")]), 10**18, 10**9)
    second = _timed(path_model(NAMES, [((MAIN, W), 4096, 0, "stdio buffer")]), 10**18, 2 * 10**9)
    _, since = interval.interval_profile(first, keys, None)
    data, _ = interval.interval_profile(second, keys, since)
    # The buffer's block from nothing, not 3,996 bytes more of the path's own.
    assert _decoded(data)[1] == {("main", "w"): [1, 4096, 1, 4096, 0]}
    # Nor is another runtime's the same path.
    _, since = interval.interval_profile(second, keys, since)
    third = _timed(path_model(NAMES, [((MAIN, W), 8192, 0, "dynamic loader")]), 10**18, 3 * 10**9)
    assert _decoded(interval.interval_profile(third, keys, since)[0])[1] == {("main", "w"): [1, 8192, 1, 8192, 0]}


def test_a_figure_that_went_back_is_none_of_the_interval_s() -> None:
    # A later answer of fewer allocations and an earlier time than the
    # last pushed (the pusher pushes none such, but nothing forbids it).
    keys = interval.PathKeys()
    first = _timed(path_model(NAMES, [((MAIN, A), 300, 0, "")]), 10**18, 5 * 10**9)
    _, since = interval.interval_profile(first, keys, None)
    first.paths[0] = dataclasses.replace(first.paths[0], allocs=3, frees=0, bytes=(0, 900, 0, 0))
    _, since = interval.interval_profile(first, keys, since)
    second = _timed(path_model(NAMES, [((MAIN, A), 100, 0, "")]), 10**18, 2 * 10**9)
    profile, samples = _decoded(interval.interval_profile(second, keys, since)[0])
    assert (profile.time_nanos, profile.duration_nanos) == (10**18 + 2 * 10**9, 0)
    assert samples == {("main", "a"): [0, 0, 1, 100, 0]}


def test_a_whole_run_of_several_processes_is_from_the_first_start_to_the_last_end() -> None:
    model = path_model(NAMES, [((MAIN, A), 100, 0, "")])
    run = model.runs[0]
    model.runs[:] = [dataclasses.replace(run, pid=2, start_unix_ns=8 * 10**9, elapsed_ns=10**9),
                     dataclasses.replace(run, pid=1, start_unix_ns=7 * 10**9, elapsed_ns=5 * 10**9),
                     dataclasses.replace(run, pid=3, start_unix_ns=9 * 10**9, elapsed_ns=2 * 10**9)]
    profile, _ = _decoded(interval.whole_run_profile(model))
    assert (profile.time_nanos, profile.duration_nanos) == (12 * 10**9, 5 * 10**9)


@pytest.mark.parametrize(("left_s", "tried_n"), [(0.0, 1), (-5.0, 1), (0.5, 2)],
                         ids=["at-the-end", "past-the-end", "before-the-end"])
def test_the_last_profile_tried_is_the_one_whose_send_reaches_the_end(
        monkeypatch: pytest.MonkeyPatch, left_s: float, tried_n: int) -> None:
    clock = _Clock()
    monkeypatch.setattr(sending, "time", argparse.Namespace(monotonic=clock.monotonic))
    said: list[str] = []
    tried: list[tuple[pyroscope.Target, Sequence[tuple[str, str]], bytes, float]] = []
    sender: sending.Sender | None = None

    def send(to: pyroscope.Target, labels: Sequence[tuple[str, str]], profile: bytes, timeout_s: float) -> None:
        # The first send lasts until close() is called, and ends left_s
        # before close()'s time is up; any other, 10 s past it.
        tried.append((to, labels, profile, timeout_s))
        assert sender is not None
        for _ in range(6000):
            if sender._closing_by is not None:
                break
            time.sleep(0.01)
        assert sender._closing_by is not None
        clock.now = sender._closing_by - left_s if len(tried) == 1 else clock.now + 10

    to = pyroscope.target("http://server:4040")
    sender = sending.Sender(to, 4.0, said.append, send)
    for n in range(3):
        sender.put(_outgoing(n))
    sender.close(5)
    # Those tried were sent; the others were not tried, nor said to fail:
    # dropped at the end.
    # The first had the push's 4 s (close()'s 5 s were longer), the second
    # what was left of close()'s time.
    assert tried == [(to, (("pid", "1"),), bytes([n]), timeout) for n, timeout in enumerate((4.0, 0.5)[:tried_n])]
    assert sender.sent == tried_n
    dropped = 3 - tried_n
    assert said == [f"push to http://server:4040: {dropped} {'profile' if dropped == 1 else 'profiles'} of the run "
                    f"could not be sent, and {'was' if dropped == 1 else 'were'} dropped"]


def test_pushes_that_work_again_say_how_many_were_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _Fake(["refused", "refused", None, "refused", None])
    said: list[str] = []
    sender = _sender(fake, said, monkeypatch)
    for n in range(5):
        sender.put(_outgoing(n))
    sender.close(5)
    assert said == ["push to http://server:4040 failed: refused; profiles are dropped until it works again",
                    "push to http://server:4040 works again; 2 profiles were dropped meanwhile",
                    "push to http://server:4040 failed: refused; profiles are dropped until it works again",
                    "push to http://server:4040 works again; 1 profile was dropped meanwhile"]


def test_each_path_is_numbered_by_its_whole_chain_of_frames() -> None:
    # Paths that end alike under other callers, main called again under a
    # (the same frame as the outer main's), and paths of no frame, the
    # program's and a runtime's: every one a figure of its own.
    model = path_model(NAMES, [((MAIN, A, W), 100, 0, ""), ((MAIN, B, W), 200, 0, ""), ((MAIN,), 300, 0, ""),
                               ((MAIN, A, MAIN), 400, 0, ""), ((MAIN, A), 50, 0, "stdio buffer"),
                               ((MAIN, B), 60, 0, "dynamic loader")],
                       unwound=(PathRow(None, 1, 0, (0, 7, 0, 0), (0, 0, 0, 0), ""),
                                PathRow(None, 1, 0, (0, 9, 0, 0), (0, 0, 0, 0), "stdio buffer")))
    keys = interval.PathKeys()
    _, counts = interval.interval_profile(model, keys, None)
    assert sorted(counts.by_path.values()) == [(1, size, 1, size, 0) for size in (7, 9, 50, 60, 100, 200, 300, 400)]
    # main under a, the first frames numbered: not the outer main either.
    _, alone = interval.interval_profile(path_model(NAMES, [((MAIN,), 300, 0, ""), ((MAIN, A, MAIN), 400, 0, "")]),
                                         interval.PathKeys(), None)
    assert sorted(alone.by_path.values()) == [(1, 300, 1, 300, 0), (1, 400, 1, 400, 0)]
    # Numbered alike in another reduction, whose nodes come in another order.
    again = path_model(NAMES, [((MAIN, B), 60, 0, "dynamic loader"), ((MAIN, A, MAIN), 400, 0, ""),
                               ((MAIN,), 300, 0, ""), ((MAIN, B, W), 200, 0, ""), ((MAIN, A, W), 100, 0, ""),
                               ((MAIN, A), 50, 0, "stdio buffer")],
                       unwound=(PathRow(None, 1, 0, (0, 9, 0, 0), (0, 0, 0, 0), "stdio buffer"),
                                PathRow(None, 1, 0, (0, 7, 0, 0), (0, 0, 0, 0), "")))
    assert interval.interval_profile(again, keys, None)[1].by_path == counts.by_path


def test_a_push_now_is_tried_three_times_a_second_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    tries: list[tuple[str, object]] = []

    def send(to: pyroscope.Target, labels: Sequence[tuple[str, str]], profile: bytes, timeout_s: float) -> None:
        tries.append(("send", timeout_s))
        raise pyroscope.PushFailed("down")

    monkeypatch.setattr(pyroscope, "send", send)
    monkeypatch.setattr(pyroscope, "time", argparse.Namespace(sleep=lambda s: tries.append(("sleep", s))))
    with pytest.raises(MprofError) as error:
        pyroscope.send_now(pyroscope.target("http://server:4040"), [], b"", 7.5)
    assert str(error.value) == "push to http://server:4040 failed: down"
    assert tries == [("send", 7.5), ("sleep", 1.0), ("send", 7.5), ("sleep", 1.0), ("send", 7.5)]


def test_the_sender_says_its_lines_on_stderr(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _Fake(["refused"])
    sender = sending.Sender(pyroscope.target("http://server:4040"), 1.0, send=fake)
    sender.put(_outgoing(0))
    sender.close(5)
    assert capsys.readouterr() == ("", "mprof: push to http://server:4040 failed: refused; profiles are dropped until "
                                       "it works again\nmprof: push to http://server:4040: 1 profile of the run could "
                                       "not be sent, and was dropped\n")


# A certificate of 127.0.0.1 (valid from 2000 to 2126), signed by its own
# key, made by openssl for this test alone: the server's, and the client's
# one trusted authority.
_KEY = """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgWWCc/RJS4K4ObrI4
ajuSFEgq9jBpf4VtPha6vfQ4PtahRANCAASF9GscIRm10frHf+Dn/WMeaDgAqImD
6kY9xpz8Ow5vyrBXpaM3heX/grdbGYwYB0IetS5K7ZavhcF8FFpDAWEE
-----END PRIVATE KEY-----
"""
_CERTIFICATE = """-----BEGIN CERTIFICATE-----
MIIBWzCCAQKgAwIBAgIBATAKBggqhkjOPQQDAjAUMRIwEAYDVQQDDAkxMjcuMC4w
LjEwIBcNMDAwMTAxMDAwMDAwWhgPMjEyNjAxMDEwMDAwMDBaMBQxEjAQBgNVBAMM
CTEyNy4wLjAuMTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABIX0axwhGbXR+sd/
4Of9Yx5oOACoiYPqRj3GnPw7Dm/KsFelozeF5f+Ct1sZjBgHQh61Lkrtlq+FwXwU
WkMBYQSjQzBBMA8GA1UdEwEB/wQFMAMBAf8wDwYDVR0RBAgwBocEfwAAATAdBgNV
HQ4EFgQUNxrBqYDCtHwiOZm5OyQ2hKGpPpowCgYIKoZIzj0EAwIDRwAwRAIgNl/z
PYYvEW6yeagi9JM43Fp4cgPK/uQgHIV0yAA+0LgCIBlgWYRlMQePMrjUllzRREt0
oXjdDCsrHOiK+FZLaX7O
-----END CERTIFICATE-----
"""


@pytest.mark.slow
def test_a_push_over_https_is_the_same_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "key.pem").write_text(_KEY)
    (tmp_path / "cert.pem").write_text(_CERTIFICATE)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    handler = type("Handler", (_Recorder,), {"answers": [], "requests": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "cert.pem"))  # read by each new default context
    try:
        to = pyroscope.target(f"https://user:pw@127.0.0.1:{server.server_address[1]}/base")
        pyroscope.send(to, [("service_name", "s")], b"profile", 30)
    finally:
        server.shutdown()
        server.server_close()
    [(path, headers, body)] = handler.requests
    assert (path, headers["Authorization"]) == ("/base/push.v1.PusherService/Push",
                                                "Basic " + base64.b64encode(b"user:pw").decode())
    [series] = json.loads(body)["series"]
    assert base64.b64decode(series["samples"][0]["rawProfile"]) == b"profile"


def test_a_sender_closed_with_nothing_to_send_says_nothing() -> None:
    said: list[str] = []
    sender = sending.Sender(pyroscope.target("http://server:4040"), 1.0, said.append, _Fake([]))
    sender.close(5)
    assert said == []
    assert sender.sent == 0


@pytest.mark.slow
def test_a_refusal_whose_text_is_cut_short_says_the_status_alone(
        raw_server: Callable[[Callable[[_RawServer, socket.socket], None]], _RawServer]) -> None:
    def cut(server: _RawServer, connection: socket.socket) -> None:
        server.write(connection, b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n10\r\ntoo o")

    server = raw_server(cut)  # closes the connection after 5 bytes of the chunk's 16: no text to read
    failure = _sent_within(pyroscope.target(server.url), 30.0)
    assert str(failure) == "the server answered 400 Bad Request"


def test_a_path_of_more_frees_than_allocations_is_pushed_as_it_is() -> None:
    # No file the monitor writes says so, but a hand-made one may: its
    # figures go as they are, a negative inuse among them.
    model = path_model(NAMES, [((MAIN, A), 100, 0, "")])
    model.paths[0] = dataclasses.replace(model.paths[0], allocs=1, frees=2, freed=(0, 300, 0, 0))
    _, samples = _decoded(interval.interval_profile(model, interval.PathKeys(), None)[0])
    assert samples == {("main", "a"): [1, 100, -1, -200, 0]}


@pytest.mark.slow
def test_a_refusal_s_long_reason_phrase_is_cut_to_80_characters(
        raw_server: Callable[[Callable[[_RawServer, socket.socket], None]], _RawServer]) -> None:
    phrase = "".join(str(n) * 10 for n in range(9))  # 90 characters: ten 0s, ten 1s, ... ten 8s

    def refuse(server: _RawServer, connection: socket.socket) -> None:
        server.write(connection, b"HTTP/1.1 400 %s\r\nContent-Length: 0\r\n\r\n" % phrase.encode())

    failure = _sent_within(pyroscope.target(raw_server(refuse).url), 30.0)
    assert str(failure) == "the server answered 400 " + "".join(str(n) * 10 for n in range(8)) + "..."


def test_a_server_that_is_not_there_refuses_the_connection() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # nothing listens on it
        failure = _sent_within(pyroscope.target(f"http://127.0.0.1:{port}"), 30.0)
    assert str(failure) == "Connection refused"
    assert isinstance(failure, pyroscope.PushFailed) and not failure.lasting


@pytest.mark.slow
def test_a_connection_made_past_the_deadline_is_closed_at_once(
        raw_server: Callable[[Callable[[_RawServer, socket.socket], None]], _RawServer]) -> None:
    # Headers a byte at a time: no socket wait of the exchange's times out
    # before its deadline does.
    server = raw_server(_trickled(b"HTTP/1.1 200 OK\r\n" + b"X-Pad: a\r\n" * 100_000))
    request = urllib.request.Request(pyroscope.target(server.url).endpoint, data=b"{}", method="POST")
    exchange = pyroscope._Exchange(request, 0.2)
    assert isinstance(exchange.outcome(), TimeoutError)
    # A connection the exchange's thread would make now (a slow name
    # lookup) is closed, and its request never sent.
    with socket.create_server(("127.0.0.1", 0)) as late:
        with pytest.raises(TimeoutError):
            exchange.connect(late.getsockname())
        accepted, _ = late.accept()
        with accepted:
            accepted.settimeout(30)
            assert accepted.recv(1) == b""  # closed by the exchange
