"""mprof run --push and mprof export --push against a real Pyroscope server
on loopback: what the server's own query API gives back for each interval
is the program's known allocations, and the figures mprof report gives
for the same run; a server that never answers costs the program nothing."""

from __future__ import annotations

import base64
import functools
import gzip
import http.server
import json
import os
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import pyroscope_server
from e2e_support import MPROF, Targets, mprof
from mprof.export import profile_pb2
from mprof.live.watch import request_path

ALLOC_SPACE = "memory:alloc_space:bytes:space:bytes"
ALLOC_OBJECTS = "memory:alloc_objects:count:space:bytes"
INUSE_SPACE = "memory:inuse_space:bytes:space:bytes"
INUSE_OBJECTS = "memory:inuse_objects:count:space:bytes"
TEMP_OBJECTS = "memory:temp_objects:count:space:bytes"
EVERY_S = 1.5
# The service's phases: the blocks grow_cache keeps, frees of the oldest,
# and temporaries in make_temporaries.
PHASES = (("grow", 300, 1000), ("temp", 40, 64), ("grow", 50, 4096), ("drop", 200), ("temp", 25, 512),
          ("grow", 100, 2048))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pyroscope_server.Server]:
    started = pyroscope_server.start(tmp_path_factory.mktemp("pyroscope"))
    try:
        yield started
    finally:
        started.stop()


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _wait_for(found: Callable[[], bool], what: str, within_s: float = 30) -> None:
    deadline = time.monotonic() + within_s
    while not found():
        assert time.monotonic() < deadline, f"not within {within_s} s: {what}"
        time.sleep(0.1)


def _pushed_after(server: pyroscope_server.Server, selector: str, begun_ms: int, end_ns: int) -> bool:
    """Whether the server holds a profile of the series taken after end_ns
    (by inuse_space, which every profile has: an interval that allocated
    nothing has no alloc_space at the server)."""
    times = server.profile_times_ms(INUSE_SPACE, selector, begun_ms, _now_ms() + 60_000)
    return any(taken * 1_000_000 > end_ns for taken in times)


def _known_figures(phases_done: list[tuple[str, int, int] | tuple[str, int]]) -> tuple[int, int, int, int]:
    """grow_cache's blocks and bytes allocated by these phases, and those
    still kept after them: from the program's behaviour alone."""
    kept: list[int] = []
    allocs = allocated = 0
    for phase in phases_done:
        if phase[0] == "grow":
            _, count, size = phase  # type: ignore[misc]
            allocs += count
            allocated += count * size
            kept += [size] * count
        elif phase[0] == "drop":
            del kept[:phase[1]]
    return allocs, allocated, len(kept), sum(kept)


def _known_temporaries(phases_done: list[tuple[str, int, int] | tuple[str, int]]) -> int:
    """make_temporaries's temporaries in these phases: every block it
    allocates, each freed before the next."""
    return sum(phase[1] for phase in phases_done if phase[0] == "temp")


@pytest.mark.server
@pytest.mark.slow
def test_each_interval_is_pushed_with_its_exact_figures(targets: Targets, tmp_path: Path,
                                                         server: pyroscope_server.Server) -> None:
    program = targets.build("push_phases")
    output = tmp_path / "service.mprof"
    begun_ms = _now_ms() - 1000
    service = subprocess.Popen([MPROF, "run", "--push", server.url, "--every", str(EVERY_S), "--label", "team=memory",
                                "--label", "release=1.2.3", "--quiet", "-o", output, "--", program],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=tmp_path)
    assert service.stdin and service.stdout
    selector = '{service_name="push_phases",release="1.2.3"}'

    def profiles() -> list[int]:
        return server.profile_times_ms(INUSE_SPACE, selector, begun_ms, _now_ms() + 60_000)

    phase_times: list[tuple[int, int]] = []
    for phase in PHASES:
        service.stdin.write(" ".join(map(str, phase)) + "\n")
        service.stdin.flush()
        start_ns, end_ns = map(int, service.stdout.readline().split())
        phase_times.append((start_ns, end_ns))
        # In step with the pushes: the next phase once a profile taken after
        # this one is at the server, so that each lies within one interval.
        _wait_for(functools.partial(_pushed_after, server, selector, begun_ms, end_ns),
                  f"a profile pushed after phase {phase}")
    quit_ns = time.time_ns()
    service.stdin.write("quit\n")
    service.stdin.close()
    assert service.wait(60) == 7, service.stderr.read() if service.stderr else ""
    stderr = service.stderr.read() if service.stderr else ""
    assert stderr == ""  # no push failed, nothing was dropped
    # mprof run ends once its pushes are done: the last is the process's end.
    times = profiles()
    assert times and times[-1] * 1_000_000 > quit_ns, (times, quit_ns)

    report = json.loads(mprof("report", "--format", "json", output).stdout)
    pid = report["runs"][0]["pid"]
    grow = next(row for row in report["direct"] if row["function"] == "grow_cache")

    done: list[tuple[str, int, int] | tuple[str, int]] = []
    sums = [0, 0, 0]
    before_ms = begun_ms
    for taken_ms in times:
        allocs_before, allocated_before, _, _ = _known_figures(done)
        temporaries_before = _known_temporaries(done)
        for phase, (start_ns, end_ns) in zip(PHASES, phase_times, strict=True):
            assert not start_ns - 1_000_000 <= taken_ms * 1_000_000 <= end_ns + 1_000_000, "a phase straddles"
            if before_ms * 1_000_000 < start_ns and end_ns < taken_ms * 1_000_000:
                done.append(phase)
        allocs, allocated, live, live_bytes = _known_figures(done)
        figures = {type_id: server.functions(type_id, selector, taken_ms, taken_ms + 1)
                   for type_id in (ALLOC_SPACE, ALLOC_OBJECTS, INUSE_SPACE, INUSE_OBJECTS, TEMP_OBJECTS)}

        def own(type_id: str, function: str = "grow_cache",
                figures: dict[str, dict[str, pyroscope_server.FunctionFigures]] = figures) -> int:
            found = figures[type_id].get(function)
            return found.own if found else 0

        assert own(ALLOC_OBJECTS) == allocs - allocs_before, (taken_ms, figures[ALLOC_OBJECTS])
        assert own(ALLOC_SPACE) == allocated - allocated_before, (taken_ms, figures[ALLOC_SPACE])
        assert own(INUSE_OBJECTS) == live, (taken_ms, figures[INUSE_OBJECTS])
        assert own(INUSE_SPACE) == live_bytes, (taken_ms, figures[INUSE_SPACE])
        # The interval's temporaries, not the run's so far.
        assert own(TEMP_OBJECTS, "make_temporaries") == _known_temporaries(done) - temporaries_before, \
            (taken_ms, figures[TEMP_OBJECTS])
        # The service's own function leads each interval it was busy in.
        for type_id, expected in ((ALLOC_SPACE, allocated - allocated_before), (INUSE_SPACE, live_bytes)):
            if expected:
                leader = max(figures[type_id].items(), key=lambda item: item[1].own)[0]
                assert leader == "grow_cache", (type_id, taken_ms, figures[type_id])
        sums[0] += own(ALLOC_OBJECTS)
        sums[1] += own(ALLOC_SPACE)
        sums[2] += own(TEMP_OBJECTS, "make_temporaries")
        before_ms = taken_ms
    assert done == list(PHASES)

    # The pushes add up to what mprof report says of the whole run.
    assert sums[:2] == [grow["calls"], grow["bytes"]] == list(_known_figures(list(PHASES))[:2])
    assert sums[2] == _known_temporaries(list(PHASES)) == 40 + 25
    assert (live, live_bytes) == (grow["kept_objects"], grow["kept_bytes"])

    labels = server.series_labels(selector, begun_ms, _now_ms() + 60_000)
    assert labels
    for series in labels:
        assert {key: series.get(key) for key in ("service_name", "team", "release", "pid", "program", "hostname")} \
            == {"service_name": "push_phases", "team": "memory", "release": "1.2.3", "pid": str(pid),
                "program": str(program), "hostname": socket.gethostname()}, series
    assert {series["__type__"] for series in labels} >= {"alloc_space", "alloc_objects", "inuse_space",
                                                         "inuse_objects", "temp_objects"}


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A server that takes connections and never answers: its listening
    socket's backlog completes each connection, and nothing reads it."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(64)
        yield f"http://127.0.0.1:{listening.getsockname()[1]}"


@pytest.mark.slow
def test_a_server_that_never_answers_costs_the_program_nothing(targets: Targets, tmp_path: Path,
                                                               silent_server: str) -> None:
    program = targets.build("push_work")
    every_s = 0.5
    plain, pushed, plain_waits, waits = [], [], [], []
    for _ in range(5):  # interleaved, so that the machine's other load falls on both alike
        for push in (False, True):
            started = time.monotonic()
            completed = subprocess.run(
                [MPROF, "run", *(["--push", silent_server, "--every", str(every_s)] if push else []), "--quiet",
                 "-o", tmp_path / "work.mprof", "--", program], capture_output=True, text=True, timeout=120)
            wall_s = time.monotonic() - started
            assert completed.returncode == 5, completed.stderr
            work_ns = int(completed.stdout)
            (pushed if push else plain).append(work_ns)
            if push:
                lines = completed.stderr.splitlines()
                assert re.fullmatch(rf"mprof: push to {re.escape(silent_server)} failed: no answer within [0-9.]+ s; "
                                    "profiles are dropped until it works again", lines[0]), completed.stderr
                assert re.fullmatch(rf"mprof: push to {re.escape(silent_server)}: \d+ profiles? of the run could "
                                    r"not be sent, and (was|were) dropped", lines[1]), completed.stderr
                assert len(lines) == 2, completed.stderr
                waits.append(wall_s - work_ns / 1e9)
            else:
                assert completed.stderr == ""
                plain_waits.append(wall_s - work_ns / 1e9)
    ratio = statistics.median(pushed) / statistics.median(plain)
    # Here 0.89 on a quiet machine, 1.2 to 1.35 under a load of 6 to 9 on
    # 2 cores; a program that waited for the silent server would wait its
    # no-answer limit at each interval's push and take several times as long.
    assert ratio < 2.0, (ratio, plain, pushed)
    # After the program, mprof run waits for what is under way at most one
    # push's time (0.5 s) beside the reduction of the last file, where a
    # push left to its retries would take 5.5 s more: beyond the time mprof
    # run takes without --push, in the same rounds, the margins are wide
    # both ways, as the machine's load makes the reduction slower.
    assert statistics.median(waits) - statistics.median(plain_waits) < 4.0, (waits, plain_waits)


@pytest.mark.server
def test_export_pushes_a_finished_run(targets: Targets, tmp_path: Path, server: pyroscope_server.Server) -> None:
    program = targets.build("push_phases")
    output = tmp_path / "finished.mprof"
    commands = "".join(" ".join(map(str, phase)) + "\n" for phase in PHASES)
    completed = subprocess.run([MPROF, "run", "--quiet", "-o", output, "--", program], input=commands + "quit\n",
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 7, completed.stderr
    begun_ms = _now_ms() - 60_000
    pushed = mprof("export", "--push", server.url, "--label", "job=nightly", "--label", "service_name=batch",
                   output)
    assert pushed.stdout == pushed.stderr == ""
    selector = '{service_name="batch",job="nightly"}'
    times = server.profile_times_ms(ALLOC_SPACE, selector, begun_ms, _now_ms() + 60_000)
    assert len(times) == 1
    report = json.loads(mprof("report", "--format", "json", output).stdout)
    run = report["runs"][0]
    # Stamped with the run's end.
    assert times[0] == (run["start_unix_ns"] + run["elapsed_ns"]) // 1_000_000
    grow = next(row for row in report["direct"] if row["function"] == "grow_cache")
    allocs, allocated, live, live_bytes = _known_figures(list(PHASES))
    found = {type_id: server.functions(type_id, selector, times[0], times[0] + 1)["grow_cache"].own
             for type_id in (ALLOC_OBJECTS, ALLOC_SPACE, INUSE_OBJECTS, INUSE_SPACE)}
    assert found == {ALLOC_OBJECTS: allocs, ALLOC_SPACE: allocated, INUSE_OBJECTS: live, INUSE_SPACE: live_bytes}
    assert (allocs, allocated, live, live_bytes) == (grow["calls"], grow["bytes"], grow["kept_objects"],
                                                     grow["kept_bytes"])
    temporaries = server.functions(TEMP_OBJECTS, selector, times[0], times[0] + 1)["make_temporaries"].own
    assert temporaries == _known_temporaries(list(PHASES)) == 40 + 25
    labels = server.series_labels(selector, begun_ms, _now_ms() + 60_000)
    assert {(series["program"], series["pid"]) for series in labels} == {(str(program), str(run["pid"]))}


@pytest.mark.slow
def test_push_failures_are_one_line(targets: Targets, tmp_path: Path, silent_server: str) -> None:
    program = targets.build("push_phases")
    output = tmp_path / "refused.mprof"
    subprocess.run([MPROF, "run", "--quiet", "-o", output, "--", program], input="quit\n", capture_output=True,
                   text=True, timeout=60)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        refused_url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    failed = mprof("export", "--push", refused_url, output, check=False)
    assert (failed.returncode, failed.stdout) == (1, "")
    assert failed.stderr == f"mprof: push to {refused_url} failed: Connection refused\n"
    for arguments, why in ((["--push", "ftp://host"], "--push ftp://host: not an http:// or https:// URL of a server"),
                           (["--push", "http://h:1", "--label", "2x=y"], "argument --label: '2x=y' is not KEY=VALUE"),
                           (["--push", "http://h:1", "--label", "__name__=y"], "argument --label: '__name__=y' is not"),
                           (["--push", "http://h:1", "--label", "a=1", "--label", "a=2"], "--label a is given twice"),
                           (["--label", "a=1"], "--label labels what --push sends: give --push URL too"),
                           (["--push", "http://h:1", "--live"], "--push and --live both watch the program")):
        refused = mprof("run", *arguments, "--", program, check=False)
        # Refused before the program starts: it would end with status 7.
        assert refused.returncode == 2 and why in refused.stderr.splitlines()[-1], refused.stderr
        assert "Traceback" not in refused.stderr


@pytest.mark.server
@pytest.mark.slow
def test_attach_pushes_what_the_process_does_while_attached(targets: Targets, tmp_path: Path,
                                                            server: pyroscope_server.Server) -> None:
    program = targets.build("push_phases")
    plain_env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}
    service = subprocess.Popen([program], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=plain_env)
    assert service.stdin and service.stdout

    def phase(command: str) -> int:
        service.stdin.write(command + "\n")  # type: ignore[union-attr]
        service.stdin.flush()  # type: ignore[union-attr]
        return int(service.stdout.readline().split()[1])  # type: ignore[union-attr]

    try:
        phase("grow 10 999")  # before the attach: never seen
        begun_ms = _now_ms() - 1000
        attached = subprocess.Popen([MPROF, "attach", str(service.pid), "-o", tmp_path / "attached.mprof", "--push",
                                     server.url, "--every", "1", "--label", "service_name=attached-service"],
                                    stderr=subprocess.PIPE, text=True, env=plain_env)
        assert attached.stderr
        line = attached.stderr.readline()
        assert line.startswith(f"mprof: attached to process {service.pid};"), line + attached.stderr.read()
        selector = '{service_name="attached-service"}'
        for command in ("grow 100 1000", "drop 60"):  # drops the 10 never seen, then 50 of the 100
            ended_ns = phase(command)
            _wait_for(functools.partial(_pushed_after, server, selector, begun_ms, ended_ns),
                      f"a profile pushed after {command}")
        assert subprocess.run([MPROF, "detach", str(service.pid)], capture_output=True, timeout=60).returncode == 0
        said = attached.stderr.read()
        assert attached.wait(60) == 0, said
        assert said.startswith(f"mprof: detached from process {service.pid}"), said
        assert len(said.splitlines()) == 1, said  # nothing of the pushes
        assert phase("grow 5 5") > 0  # the process runs on
    finally:
        service.kill()
        service.wait()
    times = server.profile_times_ms(ALLOC_SPACE, selector, begun_ms, _now_ms() + 60_000)
    allocated = sum(server.functions(ALLOC_SPACE, selector, taken, taken + 1).get(
        "grow_cache", pyroscope_server.FunctionFigures(0, 0)).own for taken in times)
    assert allocated == 100 * 1000
    last = server.functions(INUSE_SPACE, selector, times[-1], times[-1] + 1)
    assert last["grow_cache"].own == 50 * 1000


@pytest.mark.server
def test_each_process_of_the_run_is_its_own_series(targets: Targets, tmp_path: Path,
                                                   server: pyroscope_server.Server) -> None:
    forkexec, leaf = targets.build("forkexec"), targets.build("leaf")
    begun_ms = _now_ms() - 1000
    completed = subprocess.run([MPROF, "run", "--push", server.url, "--every", "1", "--label", "service_name=forked",
                                "-o", tmp_path / "forked.mprof", "--", forkexec, leaf],
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    images = re.findall(r"\(pid (\d+), (\S+)\)", completed.stderr)
    # mprof run lists the images by their start: the two children start
    # within a moment of each other, in either order on a loaded machine.
    assert sorted(program for _, program in images) == sorted([str(forkexec)] * 3 + [str(leaf)]), completed.stderr
    # forkexec.c's and leaf.c's blocks: (program, function, allocated, live
    # at the end) of each image; each image's series holds one of them.
    known = [(forkexec, "allocate", 10 * 100 + 5 * 100, 100), (forkexec, "allocate", 20 * 200, 2 * 200),
             (forkexec, "allocate", 30 * 300, 3 * 300), (leaf, "main", 40 * 400, 4 * 400)]
    pushed = []
    for pid, program in images:
        function = "main" if program == str(leaf) else "allocate"
        selector = f'{{service_name="forked",pid="{pid}",program="{program}"}}'
        times = server.profile_times_ms(ALLOC_SPACE, selector, begun_ms, _now_ms() + 60_000)
        assert times, (pid, program)
        allocated = sum(server.functions(ALLOC_SPACE, selector, taken, taken + 1)[function].own for taken in times)
        live = server.functions(INUSE_SPACE, selector, times[-1], times[-1] + 1)[function].own
        pushed.append((program, function, allocated, live))
    assert sorted(pushed) == sorted((str(program), function, allocated, live)
                                    for program, function, allocated, live in known)


@pytest.mark.server
@pytest.mark.slow
def test_a_process_that_stops_allocating_is_still_pushed_each_interval(targets: Targets, tmp_path: Path,
                                                                        server: pyroscope_server.Server) -> None:
    program = targets.build("push_phases")
    begun_ms = _now_ms() - 1000
    service = subprocess.Popen([MPROF, "run", "--push", server.url, "--every", "1", "--label", "service_name=idle",
                                "--quiet", "-o", tmp_path / "idle.mprof", "--", program, "idle"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert service.stdin and service.stdout
    selector = '{service_name="idle"}'
    try:
        children = Path(f"/proc/{service.pid}/task/{service.pid}/children")
        _wait_for(lambda: any(Path(f"/proc/{child}/exe").resolve() == program
                              for child in children.read_text().split()), "the program started")
        [pid] = [child for child in children.read_text().split() if Path(f"/proc/{child}/exe").resolve() == program]
        _wait_for(Path(f"/run/mprof/mprof-watch.{pid}").exists, "the pusher's first request")  # mprof(5)'s, for root

        def phase(command: str) -> int:
            service.stdin.write(command + "\n")  # type: ignore[union-attr]
            service.stdin.flush()  # type: ignore[union-attr]
            return int(service.stdout.readline().split()[1])  # type: ignore[union-attr]

        # The allocations start the monitor's answering thread; after them the
        # process only frees, and sleeps.
        for command, live_bytes in (("grow 100 1000", 100 * 1000), ("drop 60", 40 * 1000)):
            ended_ns = phase(command)
            _wait_for(functools.partial(_pushed_after, server, selector, begun_ms, ended_ns),
                      f"a profile pushed after {command}")
            taken = server.profile_times_ms(INUSE_SPACE, selector, begun_ms, _now_ms() + 60_000)[-1]
            assert server.functions(INUSE_SPACE, selector, taken, taken + 1)["grow_cache"].own == live_bytes
        # Idle: each interval is pushed all the same, two more of them.
        idle_ms = _now_ms()
        _wait_for(lambda: len(server.profile_times_ms(INUSE_SPACE, selector, idle_ms, _now_ms() + 60_000)) >= 2,
                  "two profiles pushed while the process sleeps")
        service.stdin.write("quit\n")
        service.stdin.close()
        assert service.wait(60) == 7
    finally:
        if service.poll() is None:
            service.kill()
            service.wait()


@dataclass
class _Pushed:
    """One push a server of the test's own was sent: its series' labels,
    and its profile's sample types and each sample's values by its stack,
    outermost first."""
    labels: dict[str, str]
    profile: profile_pb2.Profile
    samples: dict[tuple[str, ...], list[int]]


@dataclass
class _Recorder:
    """A server of the test's own that takes every push, or answers each
    with refusal (status, body)."""
    url: str
    pushes: list[_Pushed] = field(default_factory=list)
    refusal: tuple[int, bytes] | None = None


def _decoded(body: bytes) -> _Pushed:
    [series] = json.loads(body)["series"]
    [sample] = series["samples"]
    profile = profile_pb2.Profile.FromString(gzip.decompress(base64.b64decode(sample["rawProfile"])))
    names = {function.id: profile.string_table[function.name] for function in profile.function}
    frames = {location.id: [names[line.function_id] for line in location.line] for location in profile.location}
    samples = {tuple(reversed([name for location in each.location_id for name in frames[location]])):
               list(each.value) for each in profile.sample}
    return _Pushed({label["name"]: label["value"] for label in series["labels"]}, profile, samples)


@pytest.fixture
def recorder() -> Iterator[_Recorder]:
    recorded = _Recorder("")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status, text = recorded.refusal or (200, b"{}")
            if status == 200:
                recorded.pushes.append(_decoded(body))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    recorded.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorded
    finally:
        server.shutdown()
        server.server_close()


SAMPLE_TYPES = ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space", "temp_objects"]


@pytest.mark.slow
def test_every_process_of_a_run_is_pushed_those_that_allocated_nothing_too(targets: Targets, tmp_path: Path,
                                                                           recorder: _Recorder) -> None:
    program = targets.build("fork_idle")
    # An interval longer than the runs: each process's one push is its final file's.
    for command, status in (([program], 3), (["/bin/true"], 0)):
        recorder.pushes.clear()
        started_ns = time.time_ns()
        completed = subprocess.run([MPROF, "run", "--push", recorder.url, "--every", "600", "-o",
                                    tmp_path / "idle.mprof", "--", *command], capture_output=True, text=True,
                                   timeout=120)
        ended_ns = time.time_ns()
        assert completed.returncode == status, completed.stderr
        images = re.findall(r"\(pid (\d+), (\S+)\)", completed.stderr)
        # Nothing but the listing: no traceback, no failed push.
        assert completed.stderr.splitlines() == [
            f"mprof: the run wrote {len(images)} data file{'s' if len(images) > 1 else ''}:",
            *(f"  {tmp_path / 'idle.mprof'}{'.' + pid if n else ''} (pid {pid}, {path})"
              for n, (pid, path) in enumerate(images))], completed.stderr
        by_pid = {pushed.labels["pid"]: pushed for pushed in recorder.pushes}
        assert len(recorder.pushes) == len(by_pid) == len(images)
        for pid, path in images:
            pushed = by_pid[pid]
            assert (pushed.labels["program"], pushed.labels["service_name"]) == (path, os.path.basename(path))
            strings = pushed.profile.string_table
            assert [strings[each.type] for each in pushed.profile.sample_type] == SAMPLE_TYPES
            assert started_ns < pushed.profile.time_nanos < ended_ns
        # The parent, and /bin/true, allocated nothing: an empty profile of
        # their whole run; fork_idle.c's child 25 blocks of 40 bytes, 20 of
        # them freed at once (temporaries), 5 kept.
        assert by_pid[images[0][0]].samples == {}
        if command == [program]:
            assert len(images) == 2
            assert by_pid[images[1][0]].samples == {("main", "child_work"): [25, 1000, 5, 200, 20]}


@pytest.mark.slow
def test_what_push_refuses_or_is_told_is_one_line_without_passwords_or_escapes(
        targets: Targets, tmp_path: Path, recorder: _Recorder) -> None:
    output = tmp_path / "true.mprof"
    mprof("run", "--quiet", "-o", output, "--", "/bin/true")
    program = targets.build("fork_idle")
    for command in (["export", "--push"], ["run", "--push"]):
        tail = [output] if command[0] == "export" else ["--", program]
        for url, why in (("http://127.0.0.1:1/a b", "--push http://127.0.0.1:1/a b: a URL holds no spaces or "
                                                     "control characters (write a space as %20)"),
                         ("http://user:s3cr3t@127.0.0.1:99999", "--push http://user:***@127.0.0.1:99999: not a "
                                                                "URL: its port is not a number from 1 to 65535"),
                         ("ftp://user:s3cr3t@h", "--push ftp://user:***@h: not an http:// or https:// URL of a "
                                                 "server")):
            refused = mprof(*command, url, *tail, check=False)
            # Refused before anything is read or started (fork_idle would end with status 3).
            assert (refused.returncode, refused.stdout, refused.stderr) == (2, "", f"mprof: {why}\n"), command

    # A label with a control character, before the program starts.
    refused = mprof("run", "--push", recorder.url, "--label", "team=a\x1b[31mred", "--", program, check=False)
    assert refused.returncode == 2
    assert refused.stderr.splitlines()[-1] == "mprof run: error: argument --label: 'team=a\\x1b[31mred': a " \
                                              "label's value is UTF-8 text without control characters"
    assert recorder.pushes == []

    # A program whose path holds one is labelled as the reports name it.
    named = tmp_path / "tr\x1b]0;x\x07ue"
    shutil.copy("/bin/true", named)
    ran = mprof("run", "--quiet", "--push", recorder.url, "--every", "600", "-o", tmp_path / "named.mprof", "--",
                named)
    assert ran.stderr == ""
    [pushed] = recorder.pushes
    assert (pushed.labels["program"], pushed.labels["service_name"]) == \
        (f"{tmp_path}/tr\\x1b]0;x\\x07ue", "tr\\x1b]0;x\\x07ue")

    # The server's words are escaped, for mprof run as for mprof export.
    recorder.refusal = (400, json.dumps({"code": "invalid_argument",
                                         "message": "\x1b]0;owned\x07\x1b[2Jtoo\nold"}).encode())
    said = "the server answered 400 Bad Request: \\x1b]0;owned\\x07\\x1b[2Jtoo old"
    ran = mprof("run", "--quiet", "--push", recorder.url, "--every", "600", "-o", tmp_path / "told.mprof", "--",
                "/bin/true")
    assert ran.stderr.splitlines() == [
        f"mprof: push to {recorder.url} failed: {said}; profiles are dropped until it works again",
        f"mprof: push to {recorder.url}: 1 profile of the run could not be sent, and was dropped"]
    exported = mprof("export", "--push", recorder.url, output, check=False)
    assert (exported.returncode, exported.stderr) == (1, f"mprof: push to {recorder.url} failed: {said}\n")


@pytest.mark.slow
def test_a_process_that_cannot_be_asked_is_named_once(targets: Targets) -> None:
    """A daemon started as root that drops to nobody is answered by no one
    (mprof(5), WATCHING A RUNNING PROCESS): the pusher says so, once, in one
    line, where it pushed nothing and said nothing."""
    public = Path(tempfile.mkdtemp(prefix="mprof-test-"))
    public.chmod(0o777)  # where the process can write once it is nobody
    with socket.socket() as closed:  # nothing is pushed: no server needed
        closed.bind(("127.0.0.1", 0))
        refused_url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    every_s = 0.5
    dropper = targets.build("dropper")
    service = subprocess.Popen([MPROF, "run", "--push", refused_url, "--every", str(every_s), "--quiet", "-o",
                                public / "dropped.mprof", "--", dropper, "drop"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=public)
    assert service.stdout and service.stderr
    try:
        assert service.stdout.readline() == "ready\n"
        children = Path(f"/proc/{service.pid}/task/{service.pid}/children")
        [pid] = [int(child) for child in children.read_text().split()
                 if Path(f"/proc/{child}/exe").resolve() == dropper]
        said = (f"mprof: push: process {pid}: belongs to another user (uid 65534), and the monitor answers only the "
                "user it runs as; it is not pushed while it runs\n")
        assert select.select([service.stderr], [], [], 60)[0], "nothing said"
        assert service.stderr.readline() == said
        # Three more intervals' asks, with nothing more said.
        assert not select.select([service.stderr], [], [], 3 * every_s)[0]
        os.kill(pid, signal.SIGTERM)
        assert service.wait(60) != 0
        assert said not in service.stderr.read()
    finally:
        if service.poll() is None:
            service.kill()
            service.wait()
        shutil.rmtree(public, ignore_errors=True)


@pytest.mark.slow
def test_each_push_holds_the_temporaries_of_its_interval(targets: Targets, tmp_path: Path,
                                                         recorder: _Recorder) -> None:
    """temp_objects, like alloc_objects, is the interval's: a push after
    temporaries in several intervals says each interval's own count."""
    program = targets.build("push_phases")
    # Without the heartbeat (no other temporaries): push_phases.c's
    # temporaries are those of its temp phases, one per block; between two
    # temp phases, one that makes none.
    phases = (("temp", 40, 64), ("grow", 10, 100), ("temp", 25, 64), ("temp", 7, 4096), ("drop", 4))
    service = subprocess.Popen([MPROF, "run", "--push", recorder.url, "--every", "1", "--quiet", "-o",
                                tmp_path / "temps.mprof", "--", program, "idle"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert service.stdin and service.stdout and service.stderr
    try:
        # The process looks for a request only as it allocates (mprof(5),
        # WATCHING A RUNNING PROCESS), every 64 allocations: a first phase
        # of 100 blocks, after the pusher's first request, starts the
        # thread that answers (maybe in the phase's midst: it makes no
        # temporaries).
        children = Path(f"/proc/{service.pid}/task/{service.pid}/children")
        _wait_for(lambda: any(Path(f"/proc/{child}/exe").resolve() == program
                              for child in children.read_text().split()), "the program started")
        [pid] = [int(child) for child in children.read_text().split()
                 if Path(f"/proc/{child}/exe").resolve() == program]
        _wait_for(request_path(pid).exists, "the pusher's first request")
        phase_times: list[tuple[int, int]] = []
        for phase in (("grow", 100, 1000), *phases):
            service.stdin.write(" ".join(map(str, phase)) + "\n")
            service.stdin.flush()
            start_ns, end_ns = map(int, service.stdout.readline().split())
            phase_times.append((start_ns, end_ns))
            # Each phase in an interval of its own.
            _wait_for(lambda end_ns=end_ns: any(pushed.profile.time_nanos > end_ns  # type: ignore[misc]
                                                for pushed in list(recorder.pushes)),
                      f"a profile pushed after phase {phase}")
        del phase_times[0]
        service.stdin.write("quit\n")
        service.stdin.close()
        assert service.wait(60) == 7
        assert service.stderr.read() == ""  # no push failed or was dropped
    finally:
        if service.poll() is None:
            service.kill()
            service.wait()

    pushes = sorted(recorder.pushes, key=lambda pushed: pushed.profile.time_nanos)
    temp = SAMPLE_TYPES.index("temp_objects")
    done: list[tuple[str, int, int] | tuple[str, int]] = []
    before_ns = 0
    for pushed in pushes:
        taken_ns = pushed.profile.time_nanos
        in_interval = []
        for phase, (start_ns, end_ns) in zip(phases, phase_times, strict=True):
            assert not start_ns <= taken_ns <= end_ns, f"phase {phase} straddles a push"
            if before_ns < start_ns and end_ns < taken_ns:
                in_interval.append(phase)
        done += in_interval
        count = sum(phase[1] for phase in in_interval if phase[0] == "temp")
        allocated = sum(phase[1] * phase[2] for phase in in_interval if phase[0] == "temp")  # type: ignore[misc]
        # make_temporaries's blocks: allocated and freed within the interval.
        expected = [count, allocated, 0, 0, count] if count else None
        assert pushed.samples.get(("main", "make_temporaries")) == expected, (taken_ns, in_interval, pushed.samples)
        # And no other path made any.
        assert sum(values[temp] for values in pushed.samples.values()) == count, (taken_ns, pushed.samples)
        before_ns = taken_ns
    assert done == list(phases)
