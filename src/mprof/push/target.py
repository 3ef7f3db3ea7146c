"""Sending one profile to a Grafana Pyroscope server through the server's
own push API (push.v1.PusherService/Push, in Connect's JSON form, as its
own clients send it): the series' labels and the gzipped pprof profile, in
one HTTP request, over by one deadline whatever the server does."""

from __future__ import annotations

import base64
import functools
import http.client
import json
import socket
import threading
import time
import unicodedata
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..reducer.errors import MprofError

PUSH_PATH = "/push.v1.PusherService/Push"
# The metric every series of mprof's is under, and the label that tells the
# server the alloc figures are already the interval's, not to be
# differenced against the series' previous profile.
METRIC = "memory"
_NOT_CUMULATIVE = ("__delta__", "false")
# Most bytes of an answer read: a refusal's text is shown in one short
# line; the rest of a body, however long, is never read.
MOST_READ = 2048
# What a path may hold as it is (RFC 3986's unreserved and reserved
# characters, and % for what the user encoded); anything else (a letter
# beyond ASCII) is percent-encoded.
_PATH_SAFE = "!#$%&'()*+,/:;=?@[]~"


class PushFailed(Exception):
    """A push the server did not take; str() says why in one line, in the
    server's words where it gave any (not escaped: the caller shows it).
    A lasting failure is the server refusing this profile (too old, too
    big), or an answer that sending again would not change: sending it
    again would not help."""

    def __init__(self, reason: str, lasting: bool = False) -> None:
        super().__init__(reason)
        self.lasting = lasting


@dataclass(frozen=True)
class Target:
    endpoint: str  # where the push goes
    shown: str  # the URL as messages name it: no password
    authorization: str | None  # Basic credentials from the URL's user:password@


def _hidden(url: str) -> str:
    """url with the password of its user:password@ shown as ***, for a
    message.  Read as loosely as a mistyped URL may be written (an
    unencoded / or @ in the password): everything from the user's colon to
    the URL's last @ is hidden."""
    scheme, separator, rest = url.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not separator or not at or ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.partition(':')[0]}:***@{host}"


def target(url: str) -> Target:
    """The server at url (http or https, with user:password@ for a server
    behind basic authentication); MprofError for one that is not a URL,
    which names it without its password."""
    named = f"--push {_hidden(url)}"
    if any(character.isspace() or unicodedata.category(character) == "Cc" for character in url):
        raise MprofError(f"{named}: a URL holds no spaces or control characters (write a space as %20)")
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError as error:
        # Not urllib's words: they quote the text they took for a port,
        # which may be a mistyped password.
        why = "its port is not a number from 1 to 65535" if str(error).startswith("Port") else str(error)
        raise MprofError(f"{named}: not a URL: {why}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise MprofError(f"{named}: not an http:// or https:// URL of a server")
    if port == 0:
        raise MprofError(f"{named}: not a URL: its port is not a number from 1 to 65535")
    if parts.query or parts.fragment:
        raise MprofError(f"{named}: the server's URL takes no query or fragment")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host if port is None else f"{host}:{port}"
    path = urllib.parse.quote(parts.path.rstrip("/"), safe=_PATH_SAFE)
    base = urllib.parse.urlunsplit((parts.scheme, netloc, path, "", ""))
    authorization = None
    if parts.username is not None:
        credentials = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(credentials.encode()).decode("ascii")
    return Target(base + PUSH_PATH, base, authorization)


def series_labels(labels: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """The series' labels as the push API takes them: mprof's own first,
    then labels, which may replace any but those."""
    merged = dict([("__name__", METRIC), _NOT_CUMULATIVE, *labels])
    return [{"name": name, "value": value} for name, value in sorted(merged.items())]


def send(to: Target, labels: Sequence[tuple[str, str]], profile: bytes, timeout_s: float) -> None:
    """Pushes the gzipped profile as one profile of the series of labels;
    PushFailed when the server did not take it within timeout_s, the whole
    exchange counted."""
    body = json.dumps({"series": [{
        "labels": series_labels(labels),
        "samples": [{"ID": str(uuid.uuid4()), "rawProfile": base64.b64encode(profile).decode("ascii")}],
    }]}).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "mprof"}
    if to.authorization:
        headers["Authorization"] = to.authorization
    request = urllib.request.Request(to.endpoint, data=body, headers=headers, method="POST")
    outcome = _Exchange(request, timeout_s).outcome()
    if isinstance(outcome, _Refused):
        # 408 and 429 ask to come back later, and a 5xx may pass; any other
        # refusal is of this profile, and a redirection is not followed (a
        # push is no GET, and the credentials are the server's).
        raise PushFailed(f"the server answered {outcome.code} {_one_line(str(outcome.reason), 80)}"
                         f"{_said(outcome.body)}", lasting=outcome.code < 500 and outcome.code not in (408, 429))
    if isinstance(outcome, BaseException):
        raise PushFailed(_reason(outcome, timeout_s))


def send_now(to: Target, labels: Sequence[tuple[str, str]], profile: bytes, timeout_s: float,
             attempts: int = 3, pause_s: float = 1.0) -> None:
    """send(), tried again while the failure may pass; MprofError, in one
    line, when the server did not take the profile."""
    for attempt in range(attempts):
        try:
            send(to, labels, profile, timeout_s)
            return
        except PushFailed as failure:
            if failure.lasting or attempt + 1 == attempts:
                raise MprofError(f"push to {to.shown} failed: {failure}") from None
        time.sleep(pause_s)


@dataclass(frozen=True)
class _Refused:
    """An answer other than 2xx: its status, reason and the first
    MOST_READ bytes of its body."""
    code: int
    reason: str
    body: bytes


class _Exchange:
    """One request on a thread of its own, so that the whole of it (the
    name's lookup, the connection, TLS, the request and the answer) is over
    by one deadline: a server that sends its answer a byte at a time passes
    every timeout of a socket operation.  At the deadline the connections
    are shut down through duplicates of their sockets, which only this
    object closes (no descriptor of someone else's is ever shut down),
    and the thread's wait ends at once."""

    def __init__(self, request: urllib.request.Request, timeout_s: float) -> None:
        self._request = request
        self._timeout_s = timeout_s
        self._lock = threading.Lock()  # guards _abandoned and _sockets
        self._abandoned = False
        self._sockets: list[socket.socket] = []
        self._done = threading.Event()
        self._outcome: _Refused | BaseException | None = None
        # No redirection handler: a 3xx is an answer like any other.
        self._opener = urllib.request.OpenerDirector()
        for handler in (urllib.request.ProxyHandler(), _Handler(self), _SecureHandler(self),
                        urllib.request.HTTPDefaultErrorHandler(), urllib.request.HTTPErrorProcessor()):
            self._opener.add_handler(handler)

    def outcome(self) -> _Refused | BaseException | None:
        """None when the server took the request; else its answer, or why
        there was none."""
        threading.Thread(target=self._run, name="mprof push request", daemon=True).start()
        if not self._done.wait(self._timeout_s):
            with self._lock:
                self._abandoned = True
                for each in self._sockets:
                    try:
                        each.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
            return TimeoutError()
        return self._outcome

    def connect(self, address: tuple[str, int], timeout: float | None = None,
                source_address: tuple[str, int] | None = None) -> socket.socket:
        """socket.create_connection, watched: the connections of the
        request's connection objects are made here."""
        made = socket.create_connection(address, timeout, source_address)
        with self._lock:
            if self._abandoned:
                made.close()
                raise TimeoutError()
            self._sockets.append(made.dup())
        return made

    def _run(self) -> None:
        try:
            with self._opener.open(self._request, timeout=self._timeout_s):
                pass  # a 2xx: its body says nothing more, and is not read
        except urllib.error.HTTPError as error:
            with error:
                self._outcome = _Refused(error.code, str(error.reason), _read(error))
        except Exception as error:  # any failure of a request is its outcome, said in one line
            self._outcome = error
        finally:
            with self._lock:
                for each in self._sockets:
                    each.close()
                self._sockets.clear()
            self._done.set()


def _watched(exchange: _Exchange, kind: type[http.client.HTTPConnection], *args: Any,
             **kwargs: Any) -> http.client.HTTPConnection:
    """A connection of kind whose sockets the exchange makes: http.client's
    own hook, through which every socket of it (a proxy's tunnel's too) is
    made."""
    connection = kind(*args, **kwargs)
    connection._create_connection = exchange.connect  # type: ignore[attr-defined]
    return connection


class _Handler(urllib.request.HTTPHandler):
    def __init__(self, exchange: _Exchange) -> None:
        super().__init__()
        self._exchange = exchange

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_watched, self._exchange, http.client.HTTPConnection), req)


class _SecureHandler(urllib.request.HTTPSHandler):
    def __init__(self, exchange: _Exchange) -> None:
        super().__init__()
        self._exchange = exchange

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_watched, self._exchange, http.client.HTTPSConnection), req)


def _read(error: urllib.error.HTTPError) -> bytes:
    try:
        return error.read(MOST_READ)
    except (OSError, ValueError, http.client.HTTPException):
        return b""


def _reason(error: BaseException, timeout_s: float) -> str:
    """Why there was no answer, in one line: unreachable, refused, reset
    mid-answer, a malformed status line or header, no whole answer in
    time."""
    reason = error.reason if isinstance(error, urllib.error.URLError) else error
    if isinstance(reason, TimeoutError):
        return f"no answer within {round(timeout_s, 1):g} s"
    text = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
    return _one_line(str(text), 200)


def _one_line(text: str, most: int) -> str:
    text = " ".join(text.split())
    return f"{text[:most]}..." if len(text) > most else text


def _said(body: bytes) -> str:
    """What the server said of its refusal (Connect's JSON error message),
    in one short line."""
    text = body.decode("utf-8", "replace")
    try:
        message = json.loads(text).get("message", "")
    except (ValueError, AttributeError):
        message = text
    message = _one_line(str(message), 200)
    return f": {message}" if message else ""
