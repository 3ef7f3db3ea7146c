"""Runs one command and measures it: wall-clock and CPU seconds and peak
resident set, as the command alone would show them."""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Runs the command from a small python3 of its own between the benchmark
# and the command, and writes the figures to a file: Linux carries a
# process's peak resident set across fork and exec, so a command started
# straight from the benchmark would count the benchmark's own (data files
# read by then, 100 MB and more), where this one's start adds a few MB.  The
# peak is the largest of the command's and of the children it waited for
# (mprof's resolver, heaptrack's interpreter), each on its own, not their sum.
# The command's LD_PRELOAD reaches it under another name, so that the
# helper itself runs without the profiler; the signals Python ignores are
# the command's to handle as it would from a shell (heaptrack on cc1plus
# dies of SIGPIPE from one, and completes where SIGPIPE is ignored).
PRELOAD = "BENCH_LD_PRELOAD"
MEASURER = r"""
import os, signal, sys, time
started = time.monotonic()
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    if "BENCH_LD_PRELOAD" in os.environ:
        os.environ["LD_PRELOAD"] = os.environ.pop("BENCH_LD_PRELOAD")
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as error:
        sys.stderr.write(f"{sys.argv[2]}: {error.strerror}\n")
    os._exit(127)
_, status, usage = os.wait4(pid, 0)
seconds = time.monotonic() - started
with open(sys.argv[1], "w") as result:
    result.write(f"{seconds} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}")
"""


@dataclass(frozen=True)
class Measured:
    seconds: float
    cpu_seconds: float  # user + system of the command and the children it waited for
    peak_rss_kb: int
    exit_status: int  # -N: killed by signal N
    errors: str  # the end of what the command wrote to stderr, where it failed


def run(command: list[str], env: dict[str, str] | None = None, stdin: Path | None = None,
        address_space: int | None = None) -> Measured:
    """One run of command, its output thrown away; address_space bounds
    the command's (a tool that may grow without bound)."""

    def bound() -> None:
        assert address_space is not None
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    if env is not None and "LD_PRELOAD" in env:
        env = {(PRELOAD if name == "LD_PRELOAD" else name): value for name, value in env.items()}
    with tempfile.NamedTemporaryFile("r", prefix="mprof-bench-", suffix=".measured") as result:
        input_file = stdin.open("rb") if stdin else None
        try:
            done = subprocess.run([sys.executable, "-c", MEASURER, result.name, *command], env=env,
                                  stdin=input_file or subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, preexec_fn=bound if address_space else None)
        finally:
            if input_file:
                input_file.close()
        figures = result.read().split()
    if done.returncode != 0 or len(figures) != 4:
        raise RuntimeError(f"could not measure {command}: {done.stderr.decode(errors='replace')[-500:]}")
    status = int(figures[3])
    errors = "" if status == 0 else " ".join(done.stderr.decode(errors="replace").strip().splitlines()[-1:])[:200]
    return Measured(float(figures[0]), float(figures[1]), int(figures[2]), status, errors)
