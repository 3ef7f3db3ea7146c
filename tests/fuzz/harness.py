"""What the fuzzers of tests/fuzz/ share: how many inputs a run tries, byte
mutations every reader gets, a command run in the worker's own process, and
one attempt bounded by an alarm, with whatever went wrong said as a
problem rather than raised."""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import os
import random
import resource
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass

DEFAULT_SECONDS = 60.0
PROGRESS_EVERY = 1000  # inputs between lines on stderr, for a long run


@dataclass(frozen=True)
class Budget:
    """How many inputs a run tries.  A count is tried whole, however long
    it takes (`make fuzz`, a long run by hand).  Without one the run goes
    on for its seconds, and past them until it has tried at least `least`:
    a slow machine still tries enough inputs for the shares a run is judged
    by to mean something, a fast one tries more, and no machine's speed
    decides whether a run passes."""
    count: int | None
    seconds: float
    least: int

    def numbers(self, failures: list[str]) -> Iterator[int]:
        """0, 1, 2... while the budget lasts, with a line on stderr every
        PROGRESS_EVERY inputs saying how many of the failures there are."""
        started = time.monotonic()
        for number in itertools.count():
            if number == self.count or (self.count is None and number >= self.least
                                        and time.monotonic() - started >= self.seconds):
                return
            if number and number % PROGRESS_EVERY == 0:
                print(f"{number} inputs, {len(failures)} failed", file=sys.stderr, flush=True)
            yield number


def add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inputs", type=int, default=int(os.environ.get("MPROF_FUZZ_INPUTS") or 0) or None,
                        help="try this many inputs, however long it takes (default: $MPROF_FUZZ_INPUTS, "
                             "else a time budget)")
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("MPROF_FUZZ_SECONDS") or
                                                               DEFAULT_SECONDS),
                        help="without a count, try inputs for this long (default: $MPROF_FUZZ_SECONDS, else "
                             f"{DEFAULT_SECONDS:.0f})")
    parser.add_argument("--least", type=int, default=0, metavar="N",
                        help="without a count, try at least N inputs, past the seconds if need be (default 0)")


def budget(arguments: argparse.Namespace) -> Budget:
    return Budget(arguments.inputs, arguments.seconds, arguments.least)


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
