"""Sending one profile to a Grafana Pyroscope server through the server's
own push API (push.v1.PusherService/Push, in Connect's JSON form, as its
own clients send it): the series' labels and the gzipped pprof profile, in
one HTTP request."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from ..reducer.errors import MprofError

PUSH_PATH = "/push.v1.PusherService/Push"
# The metric every series of mprof's is under, and the label that tells the
# server the alloc figures are already the interval's, not to be
# differenced against the series' previous profile.
METRIC = "memory"
_NOT_CUMULATIVE = ("__delta__", "false")


class PushFailed(Exception):
    """A push the server did not take; str() says why in one line.  A
    lasting failure is the server refusing this profile (too old, too big):
    sending it again would not help."""

    def __init__(self, reason: str, lasting: bool = False) -> None:
        super().__init__(reason)
        self.lasting = lasting


@dataclass(frozen=True)
class Target:
    endpoint: str  # where the push goes
    shown: str  # the URL as messages name it: no password
    authorization: str | None  # Basic credentials from the URL's user:password@


def target(url: str) -> Target:
    """The server at url (http or https, with user:password@ for a server
    behind basic authentication); MprofError for one that is not a URL."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise MprofError(f"--push {url}: not a URL: {error}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise MprofError(f"--push {url}: not an http:// or https:// URL of a server")
    if parts.query or parts.fragment:
        raise MprofError(f"--push {url}: the server's URL takes no query or fragment")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host if port is None else f"{host}:{port}"
    base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
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
    PushFailed when the server did not take it within timeout_s."""
    body = json.dumps({"series": [{
        "labels": series_labels(labels),
        "samples": [{"ID": str(uuid.uuid4()), "rawProfile": base64.b64encode(profile).decode("ascii")}],
    }]}).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "mprof"}
    if to.authorization:
        headers["Authorization"] = to.authorization
    request = urllib.request.Request(to.endpoint, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            answer.read()
    except urllib.error.HTTPError as error:
        # 408 and 429 ask to come back later, and a 5xx may pass; any other
        # refusal is of this profile.
        raise PushFailed(f"the server answered {error.code} {error.reason}{_said(error)}",
                         lasting=400 <= error.code < 500 and error.code not in (408, 429)) from None
    except (OSError, ValueError) as error:  # unreachable, refused, reset mid-answer, a malformed status line
        reason = error.reason if isinstance(error, urllib.error.URLError) else error
        if isinstance(reason, TimeoutError):
            raise PushFailed(f"no answer within {round(timeout_s, 1):g} s") from None
        raise PushFailed(getattr(reason, "strerror", None) or str(reason) or type(reason).__name__) from None


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


def _said(error: urllib.error.HTTPError) -> str:
    """What the server said of its refusal (Connect's JSON error message),
    in one short line."""
    try:
        text = error.read(2048).decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
    try:
        message = json.loads(text).get("message", "")
    except (ValueError, AttributeError):
        message = text
    message = " ".join(str(message).split())
    if not message:
        return ""
    return f": {message[:200]}{'...' if len(message) > 200 else ''}"
