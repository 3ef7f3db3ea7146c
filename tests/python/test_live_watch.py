"""The viewer's side of watching (mprof.live.watch) in the test's own
process: where requests go (mprof(5), WATCHING A RUNNING PROCESS), what it
refuses, what it tells of a process from /proc, and a Watch's request and
answers, by hand and against tests/targets/grower.c under the monitor.

The tests run as root; another user's directories are made by root and
given away (chown), and a test that plays another user says so to the code
through os.geteuid."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mprof.live import watch as watch_module
from mprof.live.sample import take
from mprof.live.watch import (
    Watch,
    check_watchable,
    has_monitor,
    request_directories,
    request_directory,
    request_path,
    resident_bytes,
    running,
)
from mprof.reducer.errors import MprofError

REPO_ROOT = Path(__file__).resolve().parents[2]
LIBMPROF = REPO_ROOT / "build" / "libmprof.so"
USER, OTHER, NOBODY = 1000, 1001, 65534
NO_PROCESS = 1 << 23  # above any pid_max (2^22 at most)


def wait_for(found: Callable[[], bool], what: str, within_s: float = 30.0) -> None:
    """Polls until found(); the bound only catches a hang."""
    deadline = time.monotonic() + within_s
    while not found():
        assert time.monotonic() < deadline, f"not within {within_s} s: {what}"
        time.sleep(0.02)


def refusal(call: Callable[[], object]) -> str:
    with pytest.raises(MprofError) as refused:
        call()
    return str(refused.value)


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The runtime directory and the shared one, in tmp_path, in place of
    /run/... and /tmp/mprof-UID for every uid."""
    runtime, shared = tmp_path / "run", tmp_path / "shared"
    monkeypatch.setattr(watch_module, "request_directories", lambda uid: (runtime, shared))
    return runtime, shared


def as_user(monkeypatch: pytest.MonkeyPatch, uid: int) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: uid)


def directory_of(path: Path, uid: int, mode: int) -> Path:
    path.mkdir()
    os.chown(path, uid, uid)
    path.chmod(mode)
    return path


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_the_places_of_requests_by_user() -> None:
    assert request_directories(0) == (Path("/run/mprof"), Path("/tmp/mprof-0"))
    assert request_directories(USER) == (Path(f"/run/user/{USER}"), Path(f"/tmp/mprof-{USER}"))


def test_root_makes_its_runtime_directory_private(places: tuple[Path, Path]) -> None:
    runtime, shared = places
    assert request_directory() == runtime
    assert mode_of(runtime) == 0o700 and stat.S_ISDIR(runtime.lstat().st_mode)
    assert not shared.exists()
    assert request_path(4321) == runtime / "mprof-watch.4321"


def test_root_goes_to_the_shared_place_when_run_cannot_have_its_directory(places: tuple[Path, Path]) -> None:
    runtime, shared = places
    runtime.write_text("")  # a file in the way: the directory cannot be made
    assert request_directory() == shared
    assert mode_of(shared) == 0o700 and shared.lstat().st_uid == 0


def test_a_user_takes_its_runtime_directory_only_when_private(places: tuple[Path, Path],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's runtime directory (systemd-logind's) is not made by the
    viewer; it is taken when it is a directory of the user's that no one
    else can use, else the shared place is, made private."""
    runtime, shared = places
    as_user(monkeypatch, USER)
    directory_of(shared, USER, 0o700)
    assert request_directory() == shared
    assert not runtime.exists()  # not made: only root's is
    directory_of(runtime, USER, 0o700)
    assert request_directory() == runtime
    for uid, mode in ((USER, 0o750), (USER, 0o701), (USER, 0o720), (OTHER, 0o700)):
        os.chown(runtime, uid, uid)
        runtime.chmod(mode)
        assert request_directory() == shared, (uid, oct(mode))
    runtime.rmdir()
    target = directory_of(runtime.with_name("elsewhere"), USER, 0o700)
    runtime.symlink_to(target)
    os.chown(runtime, USER, USER, follow_symlinks=False)
    assert request_directory() == shared


def test_a_private_shared_directory_is_left_as_it_is(places: tuple[Path, Path],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Not even its mode set again (its change time would say so)."""
    _, shared = places
    as_user(monkeypatch, USER)
    directory_of(shared, USER, 0o700)
    changed = shared.lstat().st_ctime_ns
    time.sleep(0.05)  # past the file system's clock tick, so that a change would show
    assert request_directory() == shared
    assert shared.lstat().st_ctime_ns == changed


@pytest.mark.parametrize("mode", [0o755, 0o070, 0o601, 0o710])
def test_the_users_shared_directory_is_made_private(places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
                                                    mode: int) -> None:
    """One of the user's made by hand with permissions for others is made
    private (the monitor would ignore it), not refused."""
    _, shared = places
    as_user(monkeypatch, USER)
    directory_of(shared, USER, mode)
    assert request_directory() == shared
    assert mode_of(shared) == 0o700


@pytest.mark.parametrize(("what", "make"), [
    ("a directory", lambda shared: directory_of(shared, NOBODY, 0o700)),
    ("a directory", lambda shared: directory_of(shared, NOBODY, 0o777)),
    # To a directory of the test's own, never /tmp: a mutant that changed
    # the mode through the link closed /tmp to other users of the machine.
    ("a symbolic link", lambda shared: shared.symlink_to(directory_of(shared.with_name("elsewhere"), NOBODY, 0o755))),
    ("a file", lambda shared: shared.write_text("")),
])
def test_a_shared_place_not_the_users_is_refused_by_name(places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
                                                         what: str, make: Callable[[Path], object]) -> None:
    _, shared = places
    as_user(monkeypatch, USER)
    make(shared)
    owner = shared.lstat().st_uid
    assert refusal(request_directory) == (
        f"{shared}: {what} of uid {owner}'s, not yours: requests to your processes go there only when it is a "
        "directory of yours that only you can use; have it removed (root can) and try again")
    if shared.is_symlink():  # refused, and what it points to left as it was
        assert mode_of(shared.resolve()) == 0o755


def test_a_shared_place_that_cannot_be_made_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime, shared = tmp_path / "run", tmp_path / "missing" / "shared"
    runtime.write_text("")  # a file in the way: the directory cannot be made
    monkeypatch.setattr(watch_module, "request_directories", lambda uid: (runtime, shared))
    assert refusal(request_directory) == f"{shared}: cannot create it: No such file or directory"


@pytest.fixture
def processes() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Starts programs that print a line once ready and wait; kills those
    still running at the end."""
    started: list[subprocess.Popen[str]] = []

    def start(command: list[str | Path], **options: object) -> subprocess.Popen[str]:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                   **options)  # type: ignore[call-overload]
        started.append(process)
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate()


def python(script: str) -> list[str | Path]:
    """A Python program that runs script, says it is ready and waits: the
    system's, which another user can run."""
    return ["/usr/bin/python3", "-c", f"import ctypes, os, time\n{script}\nprint('ready', flush=True)\ntime.sleep(60)"]


def test_a_process_of_the_users_own_can_be_watched(processes: Callable[..., subprocess.Popen[str]]) -> None:
    check_watchable(os.getpid())
    # Another real user, root effective (and saved): root's, as the kernel
    # owns its /proc files (it changed its ids: not dumpable, root's).
    check_watchable(processes(python(f"os.setresuid({NOBODY}, 0, 0)")).pid)


def test_a_process_that_cannot_be_watched_is_refused_in_one_line(
        processes: Callable[..., subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    assert refusal(lambda: check_watchable(NO_PROCESS)) == f"process {NO_PROCESS}: no such process"
    nobodys = processes(python(""), user=NOBODY, group=NOBODY, extra_groups=[]).pid
    assert refusal(lambda: check_watchable(nobodys)) == (
        f"process {nobodys}: belongs to another user (uid {NOBODY}), and the monitor answers only the user it "
        "runs as")
    # Root real and saved, nobody effective: the effective user is the one.
    effective = processes(python(f"os.setresuid(0, {NOBODY}, 0)")).pid
    assert refusal(lambda: check_watchable(effective)) == (
        f"process {effective}: belongs to another user (uid {NOBODY}), and the monitor answers only the user it "
        "runs as")
    # nobody's process that made itself not dumpable (PR_SET_DUMPABLE, 0):
    # its /proc files are root's, as nobody sees them.
    hidden = processes(python("ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)"), user=NOBODY, group=NOBODY,
                       extra_groups=[]).pid
    as_user(monkeypatch, NOBODY)
    assert refusal(lambda: check_watchable(hidden)) == (
        f"process {hidden}: is not dumpable (it changed its user or group, or made itself so), and the monitor "
        "answers no one then")


def test_a_proc_file_that_cannot_be_read_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where /proc is mounted with hidepid=noaccess, another user's files
    are refused (EACCES), not missing."""
    def refused(path: str) -> os.stat_result:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os, "stat", refused)
    assert refusal(lambda: check_watchable(1)) == "/proc/1/status: Permission denied"


def test_what_proc_tells_of_a_process(processes: Callable[..., subprocess.Popen[str]], tmp_path: Path) -> None:
    """Running: not once ended, even before it is waited for (a zombie),
    whatever its name says; its resident set as /proc/PID/status's VmRSS
    says (kB), while it is stopped; whether libmprof is in its memory."""
    assert running(os.getpid())
    assert not running(NO_PROCESS) and resident_bytes(NO_PROCESS) is None and not has_monitor(NO_PROCESS)
    # A name that reads as a state (PR_SET_NAME): /proc/PID/stat's "PID (x) Z (y) S ...".
    sleeper = processes(python("ctypes.CDLL(None).prctl(15, b'x) Z (y', 0, 0, 0)"))
    assert Path(f"/proc/{sleeper.pid}/comm").read_text() == "x) Z (y\n"
    assert running(sleeper.pid)
    os.kill(sleeper.pid, 19)  # SIGSTOP: its resident set stays as it is
    wait_for(lambda: Path(f"/proc/{sleeper.pid}/stat").read_text().rpartition(")")[2].split()[0] == "T",
             "the process stopped")
    assert running(sleeper.pid)
    rss_kb = next(int(line.split()[1]) for line in Path(f"/proc/{sleeper.pid}/status").read_text().splitlines()
                  if line.startswith("VmRSS:"))
    assert resident_bytes(sleeper.pid) == rss_kb * 1024 > 0
    assert not has_monitor(sleeper.pid)
    sleeper.kill()
    wait_for(lambda: Path(f"/proc/{sleeper.pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z",
             "the process ended")
    assert not running(sleeper.pid) and resident_bytes(sleeper.pid) is None  # ended, not waited for
    monitored = processes(["sh", "-c", "echo ready; exec sleep 60"],
                          env={**os.environ, "LD_PRELOAD": str(LIBMPROF), "MPROF_OUTPUT": str(tmp_path / "s.mprof")})
    assert has_monitor(monitored.pid)


@pytest.fixture
def answers_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The viewers' temporary directories go to tmp_path/answers."""
    directory = tmp_path / "answers"
    directory.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(directory))
    return directory


def test_a_watch_writes_its_request_and_removes_it(places: tuple[Path, Path], answers_in: Path) -> None:
    """The request: a file of the user's alone naming, on its one line,
    where to answer, in a private directory of the viewer's own (named
    for the viewer); both gone once the watch ends."""
    runtime, _ = places
    with Watch(os.getpid(), "push") as watch:
        request = runtime / f"mprof-watch.{os.getpid()}"
        assert watch.request == request and watch.pid == os.getpid()
        [directory] = answers_in.iterdir()
        assert directory.name.startswith("mprof-push-") and mode_of(directory) == 0o700
        assert watch.answer == directory / "snapshot.mprof"
        assert request.read_text() == f"{watch.answer}\n"
        assert mode_of(request) == 0o600 and stat.S_ISREG(request.lstat().st_mode)
    assert not request.exists() and list(answers_in.iterdir()) == []
    with Watch(os.getpid()):
        [directory] = answers_in.iterdir()
        assert directory.name.startswith("mprof-top-")


def test_a_request_left_behind_is_replaced(places: tuple[Path, Path], answers_in: Path) -> None:
    """One a killed viewer left, or a symbolic link planted in its place
    (never followed: what it names is left as it was)."""
    runtime, _ = places
    runtime.mkdir(mode=0o700)
    request = runtime / f"mprof-watch.{os.getpid()}"
    request.write_text("/somewhere/else.mprof\n")
    with Watch(os.getpid()) as watch:
        assert request.read_text() == f"{watch.answer}\n"
    target = runtime / "target"
    target.write_text("kept\n")
    request.symlink_to(target)
    with Watch(os.getpid()) as watch:
        assert not request.is_symlink() and request.read_text() == f"{watch.answer}\n"
    assert target.read_text() == "kept\n"


def test_a_request_that_cannot_be_made_is_named_and_nothing_is_left(places: tuple[Path, Path],
                                                                   answers_in: Path) -> None:
    runtime, _ = places
    runtime.mkdir(mode=0o700)
    request = runtime / f"mprof-watch.{os.getpid()}"
    (request / "in-the-way").mkdir(parents=True)
    assert refusal(lambda: Watch(os.getpid())) == f"{request}: cannot replace it: Is a directory"
    assert list(answers_in.iterdir()) == []
    (request / "in-the-way").rmdir()
    request.rmdir()
    with Watch(os.getpid()) as watch:
        request.unlink()
        runtime.rmdir()  # the directory gone too: the request cannot be made again
        assert refusal(watch.ask) == f"{request}: cannot create it: No such file or directory"


def test_a_viewer_that_keeps_making_the_request_is_named(places: tuple[Path, Path], answers_in: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Another viewer's request is there, and it makes it again as soon as
    this one has replaced it: replaced once, made again, this one gives
    up."""
    runtime, _ = places
    runtime.mkdir(mode=0o700)
    request = runtime / f"mprof-watch.{os.getpid()}"
    request.write_text("/the/other/viewer.mprof\n")
    real_open = os.open
    tries = []

    def racing(path: str | Path, flags: int, mode: int = 0o777, **where: int) -> int:
        if Path(path) == request:
            tries.append(path)
            if len(tries) == 2:
                request.write_text("/the/other/viewer.mprof\n")
        return real_open(path, flags, mode, **where)

    monkeypatch.setattr(os, "open", racing)
    assert refusal(lambda: Watch(os.getpid())) == f"{request}: another viewer keeps making it"
    assert list(answers_in.iterdir()) == []


def test_a_watch_whose_directory_was_removed_ends_quietly(places: tuple[Path, Path], answers_in: Path) -> None:
    """A cleaner of /tmp may remove the viewer's directory meanwhile."""
    with Watch(os.getpid()) as watch:
        watch.answer.parent.rmdir()
    assert not watch.request.exists()


def test_asking_changes_the_request_or_makes_it_again(places: tuple[Path, Path], answers_in: Path) -> None:
    """An ask is a new modification time of the request (mprof(5): each
    change is one); a request removed meanwhile is made again, and removed
    at the end as the first would be.  A request another viewer has put in
    its place since is theirs: left."""
    runtime, _ = places
    with Watch(os.getpid()) as watch:
        request = watch.request
        os.utime(request, ns=(0, 0))
        watch.ask()
        assert request.stat().st_mtime_ns > 0
        request.unlink()
        watch.ask()
        assert request.read_text() == f"{watch.answer}\n"
    assert not request.exists()
    with Watch(os.getpid()) as watch:
        # Made aside and renamed over this one's: another file (inode).
        request.with_name("aside").write_text("/the/other/viewer.mprof\n")
        request.with_name("aside").rename(request)
    assert request.read_text() == "/the/other/viewer.mprof\n"
    request.unlink()
    with Watch(os.getpid()) as watch:
        request.unlink()  # gone before the end: nothing to remove
    assert not request.exists() and list(answers_in.iterdir()) == []


def test_each_answer_is_taken_once(places: tuple[Path, Path], answers_in: Path) -> None:
    """An answer is taken when a new one has come: a new file renamed over
    the last, or the same rewritten later (mprof(5), FILES)."""
    with Watch(os.getpid()) as watch:
        assert watch.answered() is None
        watch.answer.write_bytes(b"first")
        assert watch.answered() == watch.answer
        assert watch.answered() is None
        aside = watch.answer.with_name("aside")
        aside.write_bytes(b"second")
        os.utime(aside, ns=(watch.answer.stat().st_atime_ns, watch.answer.stat().st_mtime_ns))
        aside.rename(watch.answer)  # another file, of the same time
        assert watch.answered() == watch.answer
        assert watch.answered() is None
        mtime = watch.answer.stat().st_mtime_ns
        os.utime(watch.answer, ns=(mtime, mtime + 1))  # the same file, written again
        assert watch.answered() == watch.answer
        assert watch.answered() is None


def test_asking_to_classify_is_a_second_line_until_its_answer_is_taken(places: tuple[Path, Path],
                                                                       answers_in: Path) -> None:
    """An ask to classify writes the request anew (mprof(5): a second line,
    classify), naming an answer of its own; the asks after it keep asking
    so (a new modification time) until that answer is taken, then write a
    request of one line again."""
    with Watch(os.getpid()) as watch:
        request = watch.request
        assert watch.classified == watch.answer.with_name("classified.mprof")
        watch.ask(classify=True)
        assert request.read_text() == f"{watch.classified}\nclassify\n"
        os.utime(request, ns=(0, 0))
        watch.ask()
        assert request.read_text() == f"{watch.classified}\nclassify\n" and request.stat().st_mtime_ns > 0
        watch.answer.write_bytes(b"an answer to the request before")
        assert watch.answered() == watch.answer
        watch.ask()
        assert request.read_text() == f"{watch.classified}\nclassify\n"
        watch.classified.write_bytes(b"classified")
        assert watch.answered() == watch.classified
        watch.ask()
        assert request.read_text() == f"{watch.answer}\n"
    assert not request.exists()


def test_the_newest_answer_is_taken_and_an_older_passed_over(places: tuple[Path, Path], answers_in: Path) -> None:
    """Answers of both names come before the view looks: the newer is
    taken, the other not afterwards."""
    with Watch(os.getpid()) as watch:
        watch.ask(classify=True)
        for older, newer in ((watch.answer, watch.classified), (watch.classified, watch.answer)):
            older.write_bytes(b"older")
            newer.write_bytes(b"newer")
            os.utime(older, ns=(1_000_000_000, 1_000_000_000))
            os.utime(newer, ns=(2_000_000_000, 2_000_000_000))
            assert watch.answered() == newer
            assert watch.answered() is None


def test_a_watched_program_answers_each_ask(tmp_path: Path) -> None:
    """tests/targets/grower.c under the monitor, asked through its real
    request directory: each answer a snapshot of its figures then (8
    blocks of 512 bytes kept a step, 200 of 24 made and freed), a newer one
    for each ask."""
    program = tmp_path / "grower"
    subprocess.run(["gcc", "-O0", "-g", "-o", program, REPO_ROOT / "tests" / "targets" / "grower.c"], check=True,
                   timeout=60)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    grower = subprocess.Popen([program, tmp_path / "log", tmp_path / "stop"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL,
                              env={**env, "LD_PRELOAD": str(LIBMPROF), "MPROF_OUTPUT": str(tmp_path / "g.mprof")})
    try:
        wait_for(lambda: (tmp_path / "log").exists() and (tmp_path / "log").read_text().count("\n") >= 2,
                 "grower's first steps")
        kept = []
        with Watch(grower.pid) as watch:
            assert watch.request == Path("/run/mprof") / f"mprof-watch.{grower.pid}"
            for asked in range(2):
                wait_for(lambda: watch.answered() is not None, f"answer {asked + 1}")
                sample = take(watch.answer)
                remember = sample.paths[("main", "grow_cache", "remember")]
                scratch = sample.paths[("main", "churn", "scratch")]
                assert remember.live_bytes == 512 * remember.live_blocks == 512 * remember.allocs > 0
                assert remember.allocs % 8 == 0
                assert scratch.live_blocks == 0 and scratch.temporaries == scratch.allocs >= 200
                kept.append(remember.allocs)
                steps = (tmp_path / "log").read_text().count("\n")
                wait_for(lambda done=steps: (tmp_path / "log").read_text().count("\n") > done, "a step more")
                watch.ask()
        assert kept[1] > kept[0]
        assert not Path(f"/run/mprof/mprof-watch.{grower.pid}").exists()
    finally:
        (tmp_path / "stop").write_text("")
        assert grower.wait(timeout=60) == 3
