"""The live view: mprof top and mprof run --live, driven as a user drives
them, in a real terminal (tmux: send-keys, capture-pane), against
tests/targets/grower.c, whose figures at every moment are known from its
own log; and the request a viewer writes, answered by the monitor as
mprof(5) says (WATCHING A RUNNING PROCESS)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from e2e_support import MPROF, Targets, monitor_env, path_name
from losing_server_support import line_of, losing_server
from mprof.cli.inputs import load_profile
from mprof.live.view import compact
from mprof.live.watch import runs_monitor
from mprof.reducer import datafile

KEPT_PER_STEP, KEPT_SIZE, CHURNED_PER_STEP = 8, 512, 200  # grower.c's
GROWN = "main > grow_cache > remember"
CHURNED = "main > churn > scratch"
REFRESH_S = 1.0  # the view's default interval
# What a shown figure may lag behind the truth beyond one refresh.  The view
# asks for the next figures as long before the refresh as the last took to
# come (measured here: never older than 1.06 s at a 1 s refresh); this is
# for grower's 50 ms steps, tmux's capture, and a reduction slower than the
# one before on a machine busy with other work.
LAG_S = 0.5
# A path's row: its live bytes exactly, then blocks, allocations a second,
# temporaries and growth, each in six characters (4,902, 14.0k, +2.3M).
COMPACT = r"([-+]?[\d,.]+[kKMG]?)"
ROW = re.compile(rf"^\s*([\d,]+)\s+{COMPACT}\s+{COMPACT}\s+{COMPACT}\s+{COMPACT}\s+(\S.*)$")


class Terminal:
    """A tmux server of the test's own with one 80x24 window running a
    shell command."""

    def __init__(self, directory: Path, command: str) -> None:
        self.socket = directory / "tmux.socket"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k not in ("LD_PRELOAD", "TMUX")}
        env["TERM"] = "xterm"
        self._env = env
        self._tmux("new-session", "-d", "-x", "80", "-y", "24", f"{command}; echo exit-status=$?; sleep 600")

    def _tmux(self, *arguments: str) -> str:
        return subprocess.run(["tmux", "-S", str(self.socket), "-f", "/dev/null", *arguments], env=self._env,
                              check=True, capture_output=True, text=True, timeout=30).stdout

    def screen(self) -> list[str]:
        return self._tmux("capture-pane", "-p").splitlines()

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", *keys)

    def wait_for(self, ready: Callable[[list[str]], bool], what: str, timeout: float = 30) -> list[str]:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if ready(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} on the screen:\n" + "\n".join(screen))
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run(["tmux", "-S", str(self.socket), "kill-server"], env=self._env, capture_output=True)


@pytest.fixture
def terminals(tmp_path: Path) -> Iterator[Callable[[str], Terminal]]:
    started: list[Terminal] = []

    def start(command: str) -> Terminal:
        started.append(Terminal(tmp_path, command))
        return started[-1]

    yield start
    for terminal in started:
        terminal.close()


def log_steps(log: Path) -> list[tuple[int, int]]:
    """grower's log: (CLOCK_MONOTONIC ns, steps done then)."""
    return [(int(ns), int(steps)) for ns, steps in (line.split() for line in log.read_text().splitlines()
                                                     if line.count(" ") == 1 and line.endswith(tuple("0123456789")))]


def steps_at(log: Path, ns: int) -> int:
    """The steps grower had done at that moment."""
    return max((steps for at, steps in log_steps(log) if at <= ns), default=0)


def wait_for_steps(log: Path, count: int) -> None:
    deadline = time.monotonic() + 30
    while not log.exists() or len(log_steps(log)) < count:
        assert time.monotonic() < deadline, "grower made no progress"
        time.sleep(0.05)


def rows(screen: list[str]) -> list[tuple[int, str, str, str, str, str]]:
    """The path rows on the screen: live bytes, then blocks, allocations/s,
    temporaries and growth as shown, and the path."""
    found = []
    for line in screen:
        if match := ROW.match(line):
            live, blocks, rate, temporaries, growth, path = match.groups()
            found.append((int(live.replace(",", "")), blocks, rate, temporaries, growth, path.strip()))
    return found


def first_path(screen: list[str]) -> str:
    shown = rows(screen)
    return shown[0][5] if shown else ""


def exact_counts(output: Path, steps: int) -> None:
    """The data file the run wrote holds exactly what grower did."""
    model = load_profile([output])
    paths = {path_name(model, path): path for path in model.paths}
    grown, churned = paths[GROWN], paths[CHURNED]
    kept = KEPT_PER_STEP * steps
    assert (grown.allocs, grown.frees, sum(grown.bytes)) == (kept, 0, kept * KEPT_SIZE)
    churned_count = CHURNED_PER_STEP * steps
    assert (churned.allocs, churned.frees, sum(churned.bytes)) == (churned_count, churned_count, 24 * churned_count)


@pytest.mark.slow
def test_top_shows_a_growing_path_within_a_refresh_sorts_by_key_and_leaves_the_program_running(
        targets: Targets, tmp_path: Path, terminals: Callable[[str], Terminal]) -> None:
    grower = targets.build("grower")
    log, stop, output = tmp_path / "grower.log", tmp_path / "stop", tmp_path / "grower.mprof"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}
    run = subprocess.Popen([MPROF, "run", "-o", output, "--", grower, log, stop], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_steps(log, 3)
        [pid] = (int(line) for line in Path(f"/proc/{run.pid}/task/{run.pid}/children").read_text().split())
        assert len(os.listdir(f"/proc/{pid}/task")) == 1  # nobody watches: no thread of the monitor's
        terminal = terminals(f"{shlex.quote(str(MPROF))} top {pid}")
        screen = terminal.wait_for(lambda screen: first_path(screen) == GROWN, "growing path")
        # The program's command line, as far as the 80 columns reach.
        header = re.fullmatch(rf"(mprof top  pid {pid}  at \d+:\d\d:\d\d  )(.*)", screen[0])
        assert header and header[2] == f"{grower} {log} {stop}"[:80 - len(header[1])].rstrip(), screen[0]
        assert "by live bytes" in "\n".join(screen)

        # The growing path's bytes, three times over: what grower had kept
        # at a moment no more than a refresh (and the lag) before the screen.
        for _ in range(3):
            time.sleep(REFRESH_S / 2)
            screen = terminal.screen()
            seen = time.monotonic_ns()
            live = {path: live for live, *_, path in rows(screen)}[GROWN]
            # In blocks: the snapshot, taken as the program runs, may come
            # in the middle of a step's eight.
            assert live % KEPT_SIZE == 0, screen
            blocks = live // KEPT_SIZE
            oldest = steps_at(log, seen - int((REFRESH_S + LAG_S) * 1e9))
            newest = steps_at(log, time.monotonic_ns()) + 1  # the step under way
            assert KEPT_PER_STEP * oldest <= blocks <= KEPT_PER_STEP * newest, (blocks, oldest, screen)
            # Nothing else on the process: its descriptors are the program's.
            assert sorted(os.listdir(f"/proc/{pid}/fd")) == ["0", "1", "2", "3"]

        # The keys: the churning path allocates 25 times as often and all
        # its blocks are temporaries; growth is the growing path's alone.
        # A snapshot is taken while the program runs, so it may find one
        # churned block of 24 bytes between its malloc and its free.
        terminal.keys("a")
        screen = terminal.wait_for(lambda screen: first_path(screen) == CHURNED, "order by allocations")
        assert "by allocations/s" in "\n".join(screen)
        churned = next(row for row in rows(screen) if row[5] == CHURNED)
        assert churned[0] in (0, 24) and churned[3] not in ("0", "") and churned[4] in ("0", "+24", "-24"), churned
        terminal.keys("t")
        terminal.wait_for(lambda screen: "by temporaries" in "\n".join(screen) and first_path(screen) == CHURNED,
                          "order by temporaries")
        terminal.keys("g")
        screen = terminal.wait_for(lambda screen: "by growth" in "\n".join(screen) and first_path(screen) == GROWN,
                                   "order by growth")
        # It never grew: a snapshot, at the view's start or now, may hold a block between its malloc and free.
        assert all(row[4] in ("0", "+24", "-24") for row in rows(screen) if row[5] == CHURNED)
        terminal.keys("l")
        terminal.wait_for(lambda screen: "by live bytes" in "\n".join(screen) and first_path(screen) == GROWN,
                          "order by live bytes")

        terminal.keys("q")
        terminal.wait_for(lambda screen: "exit-status=0" in screen, "mprof top's exit")
        assert not Path(f"/run/mprof/mprof-watch.{pid}").exists()  # mprof(5)'s, for root
        left = len(log_steps(log))
        wait_for_steps(log, left + 3)  # still running
        assert run.poll() is None
        stop.touch()
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 3, err
    steps = len(log_steps(log))
    assert out == f"grew {steps} steps\n"
    exact_counts(output, steps)


# The process's figures on the screen's second and third lines.
HEADER_LIVE = re.compile(r"^live ([\d,]+) bytes in ")
HEADER_GROWTH = re.compile(r"   growth ([-+]?[\d,]+) bytes since the view began$")


@pytest.mark.slow
def test_top_counts_growth_from_the_first_sample_over_many(
        targets: Targets, tmp_path: Path, terminals: Callable[[str], Terminal]) -> None:
    """Growth is since the view began, however many samples since: on
    every screen of four or more, the process's live bytes less its growth
    are the same bytes (the first sample's), and the growing path's growth
    is its live bytes less one amount, a number of grower's 512-byte
    blocks.  Counted from the sample before, or from each, they would
    change from screen to screen as grower grows."""
    grower = targets.build("grower")
    log, stop = tmp_path / "grower.log", tmp_path / "stop"
    program = subprocess.Popen([grower, log, stop], env=monitor_env(tmp_path / "grower.mprof"),
                               stdout=subprocess.PIPE, text=True)
    try:
        wait_for_steps(log, 3)
        terminal = terminals(f"{shlex.quote(str(MPROF))} top --interval 0.5 {program.pid}")
        screens: dict[int, tuple[int, int, str]] = {}  # by the path's live bytes: process's live, growth, path's
        last: list[str] = []
        deadline = time.monotonic() + 60
        while len(screens) < 4:
            assert time.monotonic() < deadline, "fewer than four samples shown:\n" + "\n".join(last)
            screen = terminal.screen()
            # A screen read twice alike: not one caught while it is redrawn.
            if screen == last and len(screen) > 2 and (live := HEADER_LIVE.match(screen[1])) and (
                    growth := HEADER_GROWTH.search(screen[2])) and GROWN in (found := {
                        path: (live, shown) for live, _, _, _, shown, path in rows(screen)}):
                path_live, path_growth = found[GROWN]
                screens[path_live] = (int(live[1].replace(",", "")), int(growth[1].replace(",", "")), path_growth)
            last = screen
            time.sleep(0.05)
        assert len({live - growth for live, growth, _ in screens.values()}) == 1, screens
        smallest = min(screens)
        assert smallest % KEPT_SIZE == 0  # grower keeps nothing else there
        first = [start for start in range(0, smallest + 1, KEPT_SIZE)
                 if all(compact(live - start, binary=True, sign=True) == shown
                        for live, (_, _, shown) in screens.items())]
        assert first, screens
        stop.touch()
        assert program.wait(timeout=30) == 3
    finally:
        if program.poll() is None:
            program.kill()
            program.wait()


@pytest.mark.slow
def test_run_live_shows_the_view_and_the_run_ends_as_the_program_did(
        targets: Targets, tmp_path: Path, terminals: Callable[[str], Terminal]) -> None:
    grower = targets.build("grower")
    log, stop, output = tmp_path / "grower.log", tmp_path / "stop", tmp_path / "grower.mprof"
    command = " ".join(shlex.quote(str(part)) for part in (MPROF, "run", "--live", "-o", output, "--", grower, log,
                                                          stop))
    terminal = terminals(f"{command} > {shlex.quote(str(tmp_path / 'out'))}")
    terminal.wait_for(lambda screen: first_path(screen) == GROWN, "growing path")
    terminal.keys("q")
    terminal.wait_for(lambda screen: not any(line.startswith("mprof top") for line in screen), "end of the view")
    wait_for_steps(log, len(log_steps(log)) + 3)  # the program runs on
    stop.touch()
    screen = terminal.wait_for(lambda screen: any(line.startswith("exit-status=") for line in screen), "run's exit")
    assert "exit-status=3" in screen, screen
    assert any(line.startswith("mprof: the run wrote 1 data file") for line in screen), screen
    steps = len(log_steps(log))
    assert (tmp_path / "out").read_text() == f"grew {steps} steps\n"
    exact_counts(output, steps)


@pytest.mark.slow
def test_top_watches_a_process_mprof_attach_is_attached_to(
        targets: Targets, tmp_path: Path, terminals: Callable[[str], Terminal]) -> None:
    grower = targets.build("grower")
    log, stop, output = tmp_path / "grower.log", tmp_path / "stop", tmp_path / "attached.mprof"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}
    program = subprocess.Popen([grower, log, stop], env=env, stdout=subprocess.PIPE, text=True)
    attach = None
    try:
        wait_for_steps(log, 3)
        attach = subprocess.Popen([MPROF, "attach", str(program.pid), "-o", output], env=env,
                                  stderr=subprocess.PIPE, text=True)
        assert attach.stderr is not None and attach.stderr.readline().startswith("mprof: attached")
        attached_at = len(log_steps(log))
        terminal = terminals(f"{shlex.quote(str(MPROF))} top {program.pid}")
        screen = terminal.wait_for(lambda screen: first_path(screen) == GROWN, "growing path")
        live = {path: live for live, *_, path in rows(screen)}[GROWN]
        # What grew since the attach only: the blocks kept before are not its.
        assert live % KEPT_SIZE == 0
        assert 0 < live // KEPT_SIZE <= KEPT_PER_STEP * (len(log_steps(log)) - attached_at + 2)
        terminal.keys("q")
        terminal.wait_for(lambda screen: "exit-status=0" in screen, "mprof top's exit")
        attach.send_signal(signal.SIGINT)
        assert attach.wait(timeout=60) == 0
        stop.touch()
        assert program.wait(timeout=30) == 3
    finally:
        for process in (program, attach):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
    assert output.exists()


# What the view shows of tests/targets/losing_server.c's blocks once asked
# to classify them: the four kinds, then the paths that lose the most.
LEAK_TOTALS = ["bytes                      1,064             256             100             960",
               "blocks                         6               4               1              30"]
LOST_PATHS = ["         1,000      5  definitely lost  main > lose_buffers > drop_buffer",
              "           256      4  indirectly lost  main > lose_list > list_node",
              "            64      1  definitely lost  main > lose_list > list_node"]
SCAN_AT = re.compile(r"^scan at (\d+:\d\d:\d\d)  definitely lost indirectly lost   possibly lost still reachable$")


@pytest.mark.slow
def test_top_shows_the_leak_kinds_after_the_key_and_keeps_them(
        targets: Targets, tmp_path: Path, terminals: Callable[[str], Terminal]) -> None:
    """Before c, no leak kinds (nothing is classified); after it, the
    program's, exactly, as memcheck would give them, and its most lost
    paths, on the refreshes after it too."""
    with losing_server(targets, tmp_path / "server.mprof") as program:
        terminal = terminals(f"{shlex.quote(str(MPROF))} top {program.pid}")
        screen = terminal.wait_for(lambda screen: any(row[0] == 960 for row in rows(screen)), "the kept blocks' path")
        assert line_of(program) == "quiet\n"  # the monitor's answering thread is there: no more allocations
        assert not any("lost" in line for line in screen), screen
        terminal.keys("c")
        screen = terminal.wait_for(lambda screen: any(SCAN_AT.match(line) for line in screen), "the leak kinds")
        at = next(n for n, line in enumerate(screen) if SCAN_AT.match(line))
        assert screen[at + 1:at + 6] == [*LEAK_TOTALS, *LOST_PATHS], screen
        assert max(len(line) for line in screen) <= 80
        scanned = screen[at]
        scan_time = scanned.split()[2]  # scan at H:MM:SS
        # A later refresh, not classified: the kinds stay, of the same scan.
        screen = terminal.wait_for(lambda screen: f"  at {scan_time}  " not in screen[0], "a later refresh")
        assert screen[at:at + 6] == [scanned, *LEAK_TOTALS, *LOST_PATHS], screen
        terminal.keys("q")
        terminal.wait_for(lambda screen: "exit-status=0" in screen, "mprof top's exit")


@pytest.mark.slow
def test_the_monitor_answers_a_request_as_mprof5_says(targets: Targets, tmp_path: Path) -> None:
    """A request written by hand, as mprof(5) describes it: each new
    modification time gets a snapshot at the name it gives; another user's
    request and a symbolic link get none; the answering thread is there
    only while someone asks."""
    grower = targets.build("grower")
    log, stop = tmp_path / "grower.log", tmp_path / "stop"
    program = subprocess.Popen([grower, log, stop], env=monitor_env(tmp_path / "grower.mprof"),
                               stdout=subprocess.PIPE, text=True)
    Path("/run/mprof").mkdir(mode=0o700, exist_ok=True)  # as a viewer of root's makes it
    request = Path(f"/run/mprof/mprof-watch.{program.pid}")
    answer, elsewhere = tmp_path / "answer.mprof", tmp_path / "elsewhere"

    def answered_within(seconds: float, path: Path = answer) -> bool:
        deadline = time.monotonic() + seconds
        while not path.exists():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    try:
        wait_for_steps(log, 2)
        # Another user's request, then a symbolic link to one of ours: not answered.
        # Made aside and renamed into place: the monitor never sees it ours.
        foreign = tmp_path / "foreign"
        foreign.write_text(f"{answer}\n")
        os.chown(foreign, 65534, 65534)
        foreign.rename(request)
        assert not answered_within(1.0)
        request.unlink()
        (tmp_path / "ours").write_text(f"{answer}\n")
        request.symlink_to(tmp_path / "ours")
        assert not answered_within(1.0)
        request.unlink()
        assert len(os.listdir(f"/proc/{program.pid}/task")) == 1

        request.write_text(f"{answer}\n")
        assert answered_within(30.0)  # a hang's bound: the answer comes at the program's next allocations
        first = datafile.read(answer)
        assert not first.header.final and not first.header.checkpoint
        grown = steps_at(log, time.monotonic_ns())
        assert first.summary["allocs"] <= (KEPT_PER_STEP + CHURNED_PER_STEP) * grown + 10
        assert len(os.listdir(f"/proc/{program.pid}/task")) == 2  # the monitor's answering thread

        # A new modification time: a newer snapshot, to the name the request gives now.
        request.write_text(f"{elsewhere}\n")
        assert answered_within(30.0, elsewhere)
        assert datafile.read(elsewhere).summary["allocs"] > first.summary["allocs"]
        request.unlink()
        deadline = time.monotonic() + 20
        while len(os.listdir(f"/proc/{program.pid}/task")) != 1:  # the viewer has gone: so has the thread
            assert time.monotonic() < deadline, "the answering thread stayed"
            time.sleep(0.2)
        stop.touch()
        assert program.wait(timeout=30) == 3
    finally:
        request.unlink(missing_ok=True)
        if program.poll() is None:
            program.kill()
            program.wait()


def test_top_refuses_what_it_cannot_watch(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    refused = subprocess.run([MPROF, "top", str(gone.pid)], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL, start_new_session=True)  # no controlling terminal
    assert (refused.returncode, refused.stderr) == (1, "mprof: the live view needs a terminal: standard input and "
                                                       "output are not one, and there is no controlling terminal\n")
    script = tmp_path / "top.sh"
    script.write_text(f"{shlex.quote(str(MPROF))} top {gone.pid}\n")
    in_terminal = subprocess.run(["script", "-qec", f"sh {shlex.quote(str(script))}", "/dev/null"],
                                 capture_output=True, text=True, timeout=60)
    assert f"mprof: process {gone.pid}: no such process" in in_terminal.stdout
    assert in_terminal.returncode == 1


def test_top_of_a_process_without_the_monitor_names_attach_at_once(targets: Targets, tmp_path: Path) -> None:
    """A process started without mprof: mprof top says so in one line and names mprof attach, without waiting
    for an answer that cannot come; one that linked the monitor in (libmprof.a) is watched, as one with
    libmprof.so preloaded."""
    bare = subprocess.Popen(["sleep", "60"])
    static = tmp_path / "grower_static"
    subprocess.run(["gcc", "-O0", "-g", "-o", static, Path(__file__).parents[1] / "targets" / "grower.c",
                    "-Wl,--whole-archive", Path(__file__).parents[2] / "build" / "libmprof.a",
                    "-Wl,--no-whole-archive", "-lunwind", "-lzstd", "-lz", "-ldl", "-lpthread"], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}
    linked = subprocess.Popen([static, tmp_path / "log", tmp_path / "stop"],
                              env=dict(env, MPROF_OUTPUT=str(tmp_path / "static.mprof")), stdout=subprocess.DEVNULL)
    try:
        # In a terminal (script's), as a user runs it.
        script = tmp_path / "top.sh"
        script.write_text(f"{shlex.quote(str(MPROF))} top {bare.pid}\n")
        refused = subprocess.run(["script", "-qec", f"sh {shlex.quote(str(script))}", "/dev/null"],
                                 capture_output=True, text=True, timeout=20)
        assert refused.returncode == 1
        assert refused.stdout.replace("\r\n", "\n") == (
            f"mprof: process {bare.pid}: has no libmprof to answer; mprof attach {bare.pid} profiles it from now on, "
            "and mprof top watches it then\n")
        wait_for_steps(tmp_path / "log", 1)
        assert runs_monitor(linked.pid) and not runs_monitor(bare.pid)
    finally:
        bare.kill()
        (tmp_path / "stop").touch()
        linked.wait(timeout=60)
        bare.wait()
