"""What the pushes send over HTTP, to a server of the test's own that
records each request, and how the sender retries, drops and says so."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import http.server
import json
import threading
import time
from collections.abc import Iterator, Sequence

import pytest

from mprof.export import profile_pb2
from mprof.push import interval
from mprof.push import sender as sending
from mprof.push import target as pyroscope
from mprof.reducer.errors import MprofError
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
