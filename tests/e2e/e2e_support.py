"""What the end-to-end tests share: paths, building the target programs,
running them under the monitor, finding addresses in modules, and reading
the printed tables."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mprof.reducer import datafile
from mprof.reducer.records import DataFile, Module
from mprof.report.model import Model, PathRow

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD = REPO_ROOT / "build"
LIBMPROF = BUILD / "libmprof.so"
# mprof-inject and the helper it has a process load first (inject/).
INJECT, INJECT_HELPER = BUILD / "mprof-inject", BUILD / "libmprof-inject.so"
TARGETS = REPO_ROOT / "tests" / "targets"
MPROF = REPO_ROOT / "mprof"

# -O0 and -fno-builtin: an optimiser removes malloc/free and new/delete
# pairs whose result is unused, and merges small functions into callers.
C_FLAGS = ["-O0", "-g", "-fno-builtin", "-pthread", "-Wno-alloc-size-larger-than"]


def mprof(*arguments: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The mprof command, run as a user runs it; with check, it must succeed."""
    completed = subprocess.run([MPROF, *map(str, arguments)], capture_output=True, text=True, timeout=300)
    if check:
        assert completed.returncode == 0, completed.stderr
    return completed


@dataclass
class Shared:
    """A directory the test run's processes share (make check runs the tests
    in a process per core, pytest-xdist): what one of them makes there, the
    others take as made, waiting while it is being made."""
    directory: Path

    def made(self, name: str, make: Callable[[Path], object]) -> Path:
        """directory/NAME (NAME may have directories), made once by
        make(path) where it is missing: a file or a directory, which appears
        whole or not at all."""
        made = self.directory / name
        made.parent.mkdir(parents=True, exist_ok=True)
        with open(made.parent / f".{made.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not made.exists():
                partial = made.parent / f".{made.name}.partial"
                shutil.rmtree(partial, ignore_errors=True)
                make(partial)
                os.replace(partial, made)
        return made


@dataclass
class Targets:
    shared: Shared

    def build(self, name: str, *extra: str, source: str | None = None, shared: bool = False) -> Path:
        """Compiles tests/targets/SOURCE (default NAME.c or NAME.cc) once per test run."""
        source_path = TARGETS / (source or (name + (".cc" if (TARGETS / f"{name}.cc").exists() else ".c")))
        compiler = "g++" if source_path.suffix == ".cc" else "gcc"
        flags = ["-shared", "-fPIC"] if shared else []
        # The same name built another way is another program: a directory of
        # its own for each way, the file keeping its name.
        way = hashlib.sha256("\0".join([compiler, *flags, str(source_path), *extra]).encode()).hexdigest()[:8]
        return self.shared.made(f"{name}.{way}/{name}", lambda output: subprocess.run(
            [compiler, *C_FLAGS, *flags, "-o", str(output), str(source_path), *extra], check=True))


# Debian's own rustc (package rustc), not whatever rustup put first on PATH,
# and the two symbol manglings it builds with.
RUSTC = Path("/usr/bin/rustc")
MANGLINGS = {"legacy": [], "v0": ["-C", "symbol-mangling-version=v0"]}


def rust_workers_run(shared: Shared, mangling: str) -> tuple[Path, Path]:
    """tests/targets/rust_workers.rs built at -O with the mangling, and the
    data file of its run under mprof run: made once for the test run."""
    assert RUSTC.is_file(), "Debian's rustc is missing: make check's set-up installs it (TEST_PACKAGES)"
    program = shared.made(f"rust_workers-{mangling}/rust_workers", lambda output: subprocess.run(
        [RUSTC, "-O", "-g", *MANGLINGS[mangling], "-o", output, TARGETS / "rust_workers.rs"], check=True,
        capture_output=True, timeout=300))

    def run(output: Path) -> None:
        assert mprof("run", "--quiet", "-o", output, program).stdout == "workers 5025118890 leaked 190\n"

    return program, shared.made(f"rust_workers-{mangling}/rust_workers.mprof", run)


@dataclass
class Run:
    completed: subprocess.CompletedProcess[str]
    output: Path

    def data(self, path: Path | None = None) -> DataFile:
        return datafile.read(path or self.output)

    def files(self) -> list[Path]:
        """Every data file of the run: OUTPUT and OUTPUT.* (no temporaries left)."""
        return sorted(self.output.parent.glob(self.output.name + "*"))


def monitor_env(output: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    env.update({"LD_PRELOAD": str(LIBMPROF), "MPROF_OUTPUT": str(output)})
    env.update(settings)
    return env


def module_named(data: DataFile, path: Path) -> Module:
    matches = [m for m in data.modules if Path(m.path).resolve() == path.resolve()]
    assert len(matches) == 1, [m.path for m in data.modules]
    return matches[0]


def in_module(address: int, module: Module) -> bool:
    return module.start <= address < module.end


# The last words of each table's column header line.
COLUMNS = {"Memory leak table": " path", "Allocation bin table": " types", "Direct allocation table": " calls  name",
           "Allocation call graph": " called  name", "Peak table": " path", "Temporary allocations": " path"}


def table(text: str, heading: str) -> list[str]:
    """The rows of one table: after its column header, up to the blank line (the
    call graph's rows start after the rule under its header)."""
    lines = text[text.index(heading):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith(COLUMNS[heading]))
    if heading == "Allocation call graph":
        start += 2
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        rows.append(line)
    return rows


def numbers(line: str) -> list[int]:
    return [int(n.replace(",", "")) for n in re.findall(r"(?<![\w.+/\[])\d[\d,]*(?![\w.\]])", line)]


def path_name(model: Model, path: PathRow) -> str:
    """'main > a > w': the functions of a whole path, outermost first, read
    from the database's node table."""
    return " > ".join(model.functions[function].name for function in model.path_functions(path.node))


def inject_probe(targets: Targets) -> Path:
    """The library of calls mprof-inject's tests have a process make."""
    return targets.build("libinject_probe.so", source="inject_probe.c", shared=True)


def injection(pid: int, helper: Path, *call: str | Path, loaded: bool = False) -> list[str]:
    """mprof-inject's command line for a call of a library's function."""
    return [str(INJECT), *(["--loaded"] if loaded else []), "--helper", str(helper), str(pid), *map(str, call)]


def ask_line(process: subprocess.Popen[str], line: str) -> str:
    """The line a test program that reads its input a line at a time
    answers to line."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(line + "\n")
    process.stdin.flush()
    return process.stdout.readline().rstrip("\n")


# rt_signals.c's line for its own state: SIGUSR1 blocked, its alternate
# signal stack and its MXCSR as it set them.
SIGNALS_OWN_STATE = "blocked 10 altstack ok mxcsr ok"


@dataclass
class SignalReceiver:
    """tests/targets/rt_signals.c, which takes a POSIX timer's signals and
    those rt_sender queues to it all along, as servers and daemons take
    theirs; for the tests of mprof-inject and mprof attach."""

    process: subprocess.Popen[str]
    sender: subprocess.Popen[str]

    @property
    def pid(self) -> int:
        return self.process.pid

    def ask(self, line: str) -> str:
        return ask_line(self.process, line)

    def ticks(self) -> int:
        said = self.ask("ticks")
        assert said.startswith("ticks "), said
        return int(said.split()[1])

    def runs_as_before(self, context: str) -> None:
        """Alive, traced by nobody, its thread back reading its input and
        taking the timer's signals (none is left blocked)."""
        assert self.process.poll() is None, f"{context}: the process died ({self.process.returncode})"
        assert "TracerPid:\t0\n" in Path(f"/proc/{self.pid}/status").read_text(), context
        before = self.ticks()
        deadline = time.monotonic() + 60
        while self.ticks() == before:
            assert time.monotonic() < deadline, f"{context}: the timer's signals no longer come"

    def finish(self) -> None:
        """Every value the sender queued came in order with its code, every
        timer signal with the timer's, and its own state is as it set it."""
        self.sender.send_signal(signal.SIGTERM)
        sent_line = self.sender.communicate(timeout=60)[0]
        assert sent_line.startswith("sent "), sent_line
        sent = int(sent_line.split()[1])
        assert sent > 100, "the sender hardly sent anything: the test proved nothing"
        expected = f"queued {sent} wrong 0 timer-wrong 0"
        deadline = time.monotonic() + 60
        while (said := self.ask("count")) != expected and time.monotonic() < deadline:
            assert said.endswith(" wrong 0 timer-wrong 0"), said
        assert said == expected
        assert self.ask("state") == SIGNALS_OWN_STATE


def default_dispositions() -> None:
    """In a test program, before its exec: the signals a run from a shell's
    background (nohup, make check &) has ignored, which stay ignored across
    exec, back at their defaults, as a server started on its own has them:
    a stray signal must not pass unseen."""
    for number in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)


@contextmanager
def signal_receiver(targets: Targets, env: dict[str, str] | None = None,
                    pass_fds: tuple[int, ...] = ()) -> Iterator[SignalReceiver]:
    """rt_signals started, and rt_sender queuing to it; both killed after."""
    process = subprocess.Popen([targets.build("rt_signals")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, env=env, pass_fds=pass_fds, preexec_fn=default_dispositions)
    sender = None
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        sender = subprocess.Popen([targets.build("rt_sender"), str(process.pid)], stdout=subprocess.PIPE, text=True)
        yield SignalReceiver(process, sender)
    finally:
        for started in (sender, process):
            if started:
                started.kill()
                started.wait()
