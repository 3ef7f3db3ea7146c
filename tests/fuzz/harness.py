"""What the fuzzers of tests/fuzz/ share: the inputs' count, byte
mutations every reader gets, a command run in the worker's own process, and
one attempt bounded by an alarm, with whatever went wrong said as a
problem rather than raised."""

from __future__ import annotations

import contextlib
import io
import os
import random
import resource
import signal
import traceback
from collections.abc import Callable

DEFAULT_INPUTS = 10_000
PROGRESS_EVERY = 1000  # inputs between lines on stderr, for a long run


def default_inputs() -> int:
    """MPROF_FUZZ_INPUTS, which a longer run sets, else DEFAULT_INPUTS."""
    return int(os.environ.get("MPROF_FUZZ_INPUTS") or DEFAULT_INPUTS)


def truncate(data: bytes, generator: random.Random) -> bytes:
    return data[:generator.randrange(len(data))]


def flip(data: bytes, generator: random.Random) -> bytes:
    """One to eight bits flipped (a byte made up first when there is none)."""
    out = bytearray(data or b"x")
    for _ in range(generator.randint(1, 8)):
        out[generator.randrange(len(out))] ^= 1 << generator.randrange(8)
    return bytes(out)


def uv(value: int) -> bytes:
    """value as mprof(5)'s unsigned LEB128."""
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def in_process(main: Callable[[list[str]], int], argv: list[str]) -> tuple[int, str, str]:
    """mprof's main on argv in this process: its exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


class Timeout(Exception):
    pass


def _alarm(signal_number: int, frame: object) -> None:
    raise Timeout()


def start_alarms() -> None:
    """Makes SIGALRM end an attempt (see attempt)."""
    signal.signal(signal.SIGALRM, _alarm)


def attempt(run: Callable[[], tuple[int, str | None]], seconds: int) -> tuple[int, str | None]:
    """run's exit status and problem, or -1 and what went wrong: no answer
    within seconds, memory past the address-space limit, or a traceback."""
    signal.alarm(seconds)
    try:
        return run()
    except Timeout:
        return -1, f"no answer in {seconds} s"
    except MemoryError:
        return -1, "memory past the address-space limit"
    except Exception:
        return -1, "traceback: " + traceback.format_exc(limit=4)[-700:]
    finally:
        signal.alarm(0)


def _own_peak_rss() -> int:
    """This process's peak resident set, in bytes, as its memory map counts
    it (VmHWM): getrusage's also holds what its parent had when it started
    it (Linux carries the larger across fork and exec), and a fuzzer started
    by a pytest that has grown would read pytest's."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise OSError("/proc/self/status has no VmHWM line")


def peak_rss(*who: int) -> int:
    """The largest peak resident set, in bytes, of who (default: this
    process and its children that ended: started by this small process,
    theirs are their own)."""
    return max(_own_peak_rss() if each == resource.RUSAGE_SELF else 1024 * resource.getrusage(each).ru_maxrss
               for each in who or (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
