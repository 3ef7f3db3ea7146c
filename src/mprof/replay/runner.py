"""Drives mprof-replay: prepares the trace once, then replays it against
each allocator and the do-nothing one, each replay in its own process,
round after round."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from .. import source_tree
from ..reducer.errors import MprofError
from ..reducer.symbolize import Progress
from . import allocators as allocators_module
from .allocators import Allocator
from .figures import Comparison, Replay, Workload, check, result

# Footprint samples a replay takes: enough for a chart 1000 points wide.
SAMPLES = 500


def replayer_path() -> Path:
    """MPROF_REPLAY (set by the installed launcher), or the one the source
    tree built, or one on PATH."""
    configured = os.environ.get("MPROF_REPLAY")
    candidates = [Path(configured)] if configured else []
    candidates.append(source_tree.BUILD / "mprof-replay")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("mprof-replay")
    if found:
        return Path(found)
    raise MprofError("mprof-replay not found (run make first)")


@dataclass(frozen=True)
class Source:
    """What is replayed: a trace, or Gloger's random workload."""
    trace: Path | None
    operations: int = 5_000_000
    seed: int = 1
    max_size: int = 1000

    def describe(self) -> str:
        if self.trace is not None:
            return str(self.trace)
        return f"synthetic --operations {self.operations} --seed {self.seed} --max-size {self.max_size}"


def _call(arguments: Sequence[str], env: Mapping[str, str] | None, what: str) -> Mapping[str, object]:
    """mprof-replay's JSON; its one-line error passed on as ours."""
    completed = subprocess.run([str(replayer_path()), *arguments], env=env, capture_output=True, text=True,
                               errors="surrogateescape", check=False)
    if completed.returncode != 0:
        lines = completed.stderr.strip().splitlines()
        if completed.returncode < 0:
            raise MprofError(f"mprof-replay was killed by signal {-completed.returncode} {what}")
        raise MprofError(lines[-1] if lines else f"mprof-replay failed (exit status {completed.returncode}) {what}")
    try:
        data = json.loads(completed.stdout)
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        raise MprofError(f"mprof-replay printed no JSON object {what}")
    return data


def prepare(source: Source, prepared: Path) -> Workload:
    if source.trace is not None:
        arguments = ["prepare", str(source.trace), str(prepared)]
    else:
        arguments = ["synthetic", str(prepared), "--operations", str(source.operations), "--seed", str(source.seed),
                     "--max-size", str(source.max_size)]
    return Workload.from_json(_call(arguments, None, f"preparing {source.describe()}"), "mprof-replay prepare")


def replay_once(prepared: Path, allocator: Allocator | None, order: str, where: str) -> Replay:
    """One replay in a process of its own; allocator None: the do-nothing one."""
    arguments = ["run", str(prepared), "--order", order, "--samples", str(SAMPLES)]
    if allocator is None:
        arguments.append("--null")
    env = allocators_module.environment(allocator, os.environ)
    replay = Replay.from_json(_call(arguments, env, f"in {where}"), where)
    if allocator is not None:
        allocators_module.check_library(allocator, replay.allocator_library, where)
    return replay


def _ended_by(signal_number: int, frame: FrameType | None) -> None:
    # Once: another SIGTERM must not cut the clean-up short.
    signal.signal(signal_number, signal.SIG_IGN)
    raise SystemExit(128 + signal_number)


@contextmanager
def _terminated_as_interrupted() -> Iterator[None]:
    """SIGTERM, while it lasts, ends mprof as SIGINT does: the replay under
    way is killed and the temporary folder removed on the way out, and the
    exit status is the shell's for the signal (143).  (SystemExit is no
    Exception: nothing between here and the interpreter catches it.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _ended_by)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def compare(source: Source, chosen: Sequence[Allocator], repeat: int, order: str,
            progress: Progress | None = None) -> Comparison:
    """Every allocator replayed repeat times, and the do-nothing replay as
    often, interleaved round by round: a machine that slows down for a
    while slows every allocator's replays alike, not one allocator's."""
    progress = progress or Progress(False)
    nulls: list[Replay] = []
    runs: dict[str, list[Replay]] = {allocator.name: [] for allocator in chosen}
    # The progress line is cleared however the replays end: an error is
    # printed on a line of its own.
    with _terminated_as_interrupted(), tempfile.TemporaryDirectory(prefix="mprof-replay-") as directory:
        try:
            prepared = Path(directory) / "trace.prepared"
            progress.start(f"preparing {source.describe()}")
            workload = prepare(source, prepared)
            total, done = repeat * (len(chosen) + 1), 0
            for round_number in range(1, repeat + 1):
                for allocator in (None, *chosen):
                    name = allocator.name if allocator else "none"
                    progress.start(f"replaying, round {round_number} of {repeat}: {name}")
                    progress.update(done, total)
                    where = f"{name} replay {round_number}"
                    replay = replay_once(prepared, allocator, order, where)
                    check(replay, workload, order, where)
                    (nulls if allocator is None else runs[name]).append(replay)
                    done += 1
        finally:
            progress.finish()
    return Comparison(source.describe(), source.trace is None, order, repeat, workload, tuple(nulls),
                      tuple(result(allocator.name, runs[allocator.name], nulls) for allocator in chosen))
