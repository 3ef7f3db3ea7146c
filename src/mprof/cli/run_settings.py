"""The monitor's settings as mprof run gives them, judged before the program
starts by the rules monitor/options.c applies: a value the monitor would
not accept is refused here in one line, rather than the monitor keeping
its default with no word in the program's output.  Options of mprof run
win over the same MPROF_* variable in its environment; variables it has
no option for are judged as the monitor will read them."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable

from ..reducer.errors import MprofError

# monitor/options.h's bounds.
MAX_STACK_DEPTH = 1024
MAX_LEAK_DEPTH = 64
PATH_MAX = 4096
# Room the monitor keeps after a name pattern: ".PID", a temporary's suffix.
PATTERN_ROOM = 32
_SIGNAL_NAMES = {"USR1": signal.SIGUSR1, "USR2": signal.SIGUSR2, "HUP": signal.SIGHUP, "PROF": signal.SIGPROF,
                 "WINCH": signal.SIGWINCH, "URG": signal.SIGURG}
_BOOLEANS = ("1", "yes", "true", "on", "0", "no", "false", "off")
_DECIMAL = re.compile(r"([0-9]+)(?:\.([0-9]*))?")
USAGE_ERROR = 2  # as argparse ends a command line it refuses


def _unsigned(text: str, low: int, high: int) -> int | None:
    """options.c's parse_unsigned: decimal digits only, in [low, high]."""
    if not text or not text.isascii() or not text.isdigit():
        return None
    digits = text.lstrip("0") or "0"
    if len(digits) > 20:  # past any bound (and past what int() takes)
        return None
    value = int(digits)
    return value if low <= value <= high else None


def dump_signal(text: str) -> int | None:
    """options.c's parse_signal: a name it knows, with or without SIG, in
    any case, or a number of a signal the program can catch."""
    name = text[3:] if text[:3].upper() == "SIG" else text
    if name.upper() in _SIGNAL_NAMES and name.isascii():
        return int(_SIGNAL_NAMES[name.upper()])
    number = _unsigned(name, 1, signal.SIGRTMAX)
    return None if number in (None, signal.SIGKILL, signal.SIGSTOP) else number


def _thousandths(text: str, high: int) -> int | None:
    """options.c's parse_thousandths: off, or digits with an optional
    decimal part (digits past the thousandths count for nothing), at most
    high, in thousandths."""
    if text.lower() == "off":
        return 0
    number = _DECIMAL.fullmatch(text)
    whole = number[1].lstrip("0") or "0" if number else ""
    if not number or len(whole) > 20:
        return None
    value = int(whole) * 1000 + int((number[2] or "").ljust(3, "0")[:3])
    return value if value <= high * 1000 else None


def _growth(text: str) -> bool:
    value = _thousandths(text, 1000000)
    # Below 1.01 a checkpoint would follow nearly every allocation.
    return value is not None and (value == 0 or value >= 1010)


# What the monitor accepts of each variable, and how mprof(1) says it.
_ENVIRONMENT_RULES: dict[str, tuple[Callable[[str], bool], str]] = {
    "MPROF_DEPTH": (lambda text: _unsigned(text, 1, MAX_STACK_DEPTH) is not None, f"1 to {MAX_STACK_DEPTH}"),
    "MPROF_LEAK_DEPTH": (lambda text: _unsigned(text, 1, MAX_LEAK_DEPTH) is not None, f"1 to {MAX_LEAK_DEPTH}"),
    "MPROF_CALL_GRAPH": (lambda text: text.lower() in _BOOLEANS, "1 or 0"),
    "MPROF_FOLLOW": (lambda text: text.lower() in _BOOLEANS, "1 or 0"),
    "MPROF_VERBOSE": (lambda text: text.lower() in _BOOLEANS, "1 or 0"),
    "MPROF_DUMP_SIGNAL": (lambda text: not text or dump_signal(text) is not None,
                          "USR1, USR2, HUP, PROF, WINCH, URG or a number a program can catch"),
    "MPROF_CHECKPOINT_GROWTH": (lambda text: not text or _growth(text), "off, 0, or 1.01 to 1000000"),
    "MPROF_CHECKPOINT_INTERVAL": (lambda text: not text or _thousandths(text, 4000000) is not None,
                                  "off, or 0 to 4000000 seconds"),
    "MPROF_UNWINDER": (lambda text: text in ("", "rules", "libunwind"), "rules or libunwind"),
    "MPROF_BLOCKS": (lambda text: text in ("", "headers", "map"), "headers or map"),
    "MPROF_ALLOCATOR_PREFIX": (lambda text: re.fullmatch(r"\w{0,31}", text, re.ASCII) is not None,
                               "letters, digits and _, at most 31"),
}


def _refuse(what: str, expected: str) -> MprofError:
    return MprofError(f"{what}: the monitor takes {expected}; the program was not started", USAGE_ERROR)


def check(depth: str | None, leak_depth: str | None, signal_name: str | None, output: str, trace: bool,
          environment: dict[str, str], allocator_prefix: str | None = None) -> tuple[int | None, int | None]:
    """Refuses in one line (MprofError) any setting the monitor would not
    accept; returns the depths as numbers."""
    depths: list[int | None] = []
    for option, text, high in (("--depth", depth, MAX_STACK_DEPTH), ("--leak-depth", leak_depth, MAX_LEAK_DEPTH)):
        if text is None:
            depths.append(None)
            continue
        number = _unsigned(text, 1, high)
        if number is None:
            raise _refuse(f"{option} {text}", f"1 to {high}")
        depths.append(number)
    if signal_name is not None and dump_signal(signal_name) is None:
        raise _refuse(f"--dump-signal {signal_name}", _ENVIRONMENT_RULES["MPROF_DUMP_SIGNAL"][1])
    accepts_prefix, prefix_rule = _ENVIRONMENT_RULES["MPROF_ALLOCATOR_PREFIX"]
    if allocator_prefix is not None and not (allocator_prefix and accepts_prefix(allocator_prefix)):
        raise _refuse(f"--allocator-prefix {allocator_prefix}", prefix_rule)
    longest = len(os.fsencode(output)) + (len(".trace") if trace else 0)
    if longest >= PATH_MAX - PATTERN_ROOM:
        raise _refuse(f"-o {output[:40]}...", f"names of at most {PATH_MAX - PATTERN_ROOM - 1} bytes, "
                      f"not {longest}")
    given = {"MPROF_DEPTH": depth, "MPROF_LEAK_DEPTH": leak_depth, "MPROF_DUMP_SIGNAL": signal_name,
             "MPROF_ALLOCATOR_PREFIX": allocator_prefix}
    for name, (accepts, expected) in _ENVIRONMENT_RULES.items():
        value = environment.get(name)
        if given.get(name) is None and value is not None and not accepts(value):
            raise _refuse(f"{name}={value} in the environment", expected)
    return depths[0], depths[1]
