"""The watch protocol (mprof(5), WATCHING A RUNNING PROCESS) used the way
it can be misused: by another user, who must not be able to have a process
of root's write where a hard link says, read a process the kernel keeps
from it, or stop root's viewers; and by requests left behind by a viewer
that was killed, or dated in the future.  Each test is of a real program
under the real monitor, asked by hand as mprof(5) says, or by the viewer's
own code.  The tests run as root; another user is nobody (65534), in a
child process that setuid()s."""

from __future__ import annotations

import ctypes
import os
import select
import shutil
import stat
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from e2e_support import MPROF, Targets, monitor_env
from losing_server_support import KINDS, line_of, losing_server
from mprof.live.sample import take
from mprof.live.watch import Watch
from mprof.reducer import datafile

NOBODY = 65534
# mprof(5): a process of root's looks for requests in /run/mprof, one of
# another user's in /run/user/UID (nobody has none here), then /tmp/mprof-UID.
ROOT_REQUESTS = Path("/run/mprof")
NOBODY_REQUESTS = Path(f"/tmp/mprof-{NOBODY}")
# Where mprof looked for any user's requests before issue 47: where another
# user tries first.
OLD_PLACE = "/tmp/mprof-watch.{pid}"


def request_of(pid: int) -> Path:
    """mprof(5)'s request of a process of root's, its directory made as a
    viewer makes it."""
    ROOT_REQUESTS.mkdir(mode=0o700, exist_ok=True)
    return ROOT_REQUESTS / f"mprof-watch.{pid}"


def as_nobody(script: str) -> None:
    """Runs a shell script as nobody, whose commands may fail."""
    subprocess.run(["sh", "-c", script], user=NOBODY, group=NOBODY, extra_groups=[], cwd="/", check=True,
                   timeout=60)


def write_request(request: Path, target: Path) -> None:
    """Writes a request naming target, whole: made aside, renamed into place."""
    aside = request.with_name(f".{request.name}.aside")
    aside.write_text(f"{target}\n")
    aside.rename(request)


def wait_for(found: Callable[[], bool], what: str, within_s: float = 30.0) -> None:
    """Polls until found(); the bound only catches a hang."""
    deadline = time.monotonic() + within_s
    while not found():
        assert time.monotonic() < deadline, f"not within {within_s} s: {what}"
        time.sleep(0.02)


def threads_of(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


@pytest.fixture
def grower(targets: Targets, tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Starts tests/targets/grower.c under the monitor (kept, its stop file
    and its log in tmp_path), with the monitor's settings given; kills what
    is still running at the end, and removes its requests."""
    program = targets.build("grower")
    started: list[subprocess.Popen[str]] = []

    def start(output: Path, **settings: str) -> subprocess.Popen[str]:
        log = tmp_path / "grower.log"
        process = subprocess.Popen([program, log, tmp_path / "stop"], env=monitor_env(output, **settings),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(process)
        wait_for(lambda: log.exists() and len(log.read_text().splitlines()) >= 2, "the program's first steps")
        return process

    yield start
    for process in started:
        request_of(process.pid).unlink(missing_ok=True)
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.fixture
def public() -> Iterator[Path]:
    """A directory in /tmp that nobody can write in too (the tests'
    temporary directories are root's alone)."""
    directory = Path(tempfile.mkdtemp(prefix="mprof-test-"))
    directory.chmod(0o777)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def squatted() -> Iterator[list[Path]]:
    """Cleans up after another user's attempts: the names in /tmp the test
    lists (of its own processes), and /tmp/mprof-0 if nobody made it."""
    names: list[Path] = []
    yield names
    shared = Path("/tmp/mprof-0")
    for name in [*names, *([shared] if shared.exists() and shared.lstat().st_uid == NOBODY else [])]:
        try:
            shutil.rmtree(name) if stat.S_ISDIR(name.lstat().st_mode) else name.unlink()
        except FileNotFoundError:
            pass


def never_within(found: Callable[[], bool], within_s: float) -> bool:
    """Whether found() stays false for within_s seconds (polled, ended
    early once it is true).  The monitor looks ten times a second while the
    program allocates, so a request it should not answer is answered well
    within, if at all."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if found():
            return False
        time.sleep(0.02)
    return True


# inotify(7): a file renamed into the watched directory; the queue's overflow.
IN_MOVED_TO, IN_Q_OVERFLOW = 0x80, 0x4000
EVENT = struct.Struct("iIII")  # struct inotify_event before its name: wd, mask, cookie, len


class Replacements:
    """Counts the files renamed to one name in a directory, as the kernel
    reports each rename (inotify): every answer, which is written aside
    and renamed over the last (mprof(5), FILES), however quickly they
    come."""

    def __init__(self, directory: Path, name: str) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self._fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self._fd >= 0, os.strerror(ctypes.get_errno())
        assert libc.inotify_add_watch(self._fd, os.fsencode(directory), IN_MOVED_TO) >= 0, os.strerror(
            ctypes.get_errno())
        self._name = os.fsencode(name)
        self.count = 0

    def take(self) -> int:
        """The renames to the name so far."""
        while True:
            try:
                events = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return self.count
            at = 0
            while at < len(events):
                _, mask, _, length = EVENT.unpack_from(events, at)
                assert not mask & IN_Q_OVERFLOW, "inotify lost events"
                self.count += events[at + EVENT.size:at + EVENT.size + length].rstrip(b"\0") == self._name
                at += EVENT.size + length

    def close(self) -> None:
        os.close(self._fd)


def sleeps_of(pid: int, thread: int) -> int:
    """A thread's voluntary context switches: the answering thread's
    sleeps, one after each look for a change of the request."""
    with open(f"/proc/{pid}/task/{thread}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("voluntary_ctxt_switches:"))


@pytest.mark.slow
def test_a_request_is_answered_once_however_long_it_stays(grower: Callable[..., subprocess.Popen[str]],
                                                        tmp_path: Path) -> None:
    """A request left in place, as a viewer leaves it between refreshes, is
    answered once: while the answering thread looks for a change 20 times
    (two seconds or more), no second answer comes, where a monitor that
    answered each look would have answered again (one that forgets the
    answered request was seen writing a second answer within those looks,
    spaced out by the time each snapshot takes).  Asked again (a new modification
    time, as mprof top asks), and then with a new file of the same words,
    it answers each once more."""
    program = grower(tmp_path / "grower.mprof", MPROF_CHECKPOINT_GROWTH="off", MPROF_CHECKPOINT_INTERVAL="off")
    request, answer = request_of(program.pid), tmp_path / "answers" / "answer.mprof"
    answer.parent.mkdir()
    answers = Replacements(answer.parent, answer.name)

    def answered_once(count: int) -> None:
        """The count-th answer comes, and no other while the answering
        thread looks 20 times more."""
        wait_for(lambda: answers.take() >= count, f"answer {count}")
        [thread] = [int(task) for task in os.listdir(f"/proc/{program.pid}/task") if int(task) != program.pid]
        looked = sleeps_of(program.pid, thread)
        wait_for(lambda: sleeps_of(program.pid, thread) >= looked + 20, "20 looks for a change")
        assert answers.take() == count

    try:
        write_request(request, answer)
        answered_once(1)
        os.utime(request)
        answered_once(2)
        write_request(request, answer)
        answered_once(3)
    finally:
        answers.close()


@pytest.mark.slow
def test_a_hard_link_another_user_makes_is_no_request(grower: Callable[..., subprocess.Popen[str]],
                                                     tmp_path: Path, public: Path, squatted: list[Path]) -> None:
    """Another user links a file of root's whose first line names a file
    (with fs.protected_hardlinks=1, one it may read and write; with the
    kernel's default 0, any) wherever a request of root's process could be:
    the process never writes there, and still answers root's own request."""
    program = grower(tmp_path / "grower.mprof")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    planted = public / "planted"
    planted.write_text(f"{victim}\n")
    planted.chmod(0o666)
    request = request_of(program.pid)
    squatted.append(Path(OLD_PLACE.format(pid=program.pid)))
    as_nobody(f"ln {planted} {OLD_PLACE.format(pid=program.pid)}; mkdir -m 700 /tmp/mprof-0; "
              f"ln {planted} /tmp/mprof-0/{request.name}; ln {planted} {request}; true")
    assert planted.stat().st_nlink >= 2  # linked at least where mprof looked before
    never_within(lambda: victim.read_text(errors="replace") != "precious\n", 2.0)
    assert victim.read_text(errors="replace") == "precious\n"
    assert not request.exists()  # /run/mprof is root's alone
    answer = tmp_path / "answer.mprof"
    write_request(request, answer)
    wait_for(answer.exists, "the answer to root's request")
    assert victim.read_text() == "precious\n"


@pytest.mark.slow
def test_a_request_with_a_second_name_is_none_until_that_name_goes(grower: Callable[..., subprocess.Popen[str]],
                                                                   tmp_path: Path) -> None:
    """A request must have one name: a file linked into the requests'
    directory from elsewhere is not one."""
    program = grower(tmp_path / "grower.mprof")
    request, answer = request_of(program.pid), tmp_path / "answer.mprof"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text(f"{answer}\n")
    os.link(elsewhere, request)
    never_within(answer.exists, 2.0)
    assert not answer.exists(), "answered a request with two names"
    elsewhere.unlink()
    wait_for(answer.exists, "the answer once the request has one name")


@pytest.mark.slow
def test_a_request_naming_a_file_that_cannot_be_written_never_reaches_the_programs_stderr(
        grower: Callable[..., subprocess.Popen[str]], tmp_path: Path) -> None:
    """A request left by a viewer whose directory has gone (or that names a
    directory, not a file) gets no answer and says nothing: the program's
    stderr has only the line of the process's own failure, its final data
    file's, which the stale requests must not have used up."""
    kept = tmp_path / "kept"
    kept.mkdir()
    # No checkpoint: the final data file is the process's only write.
    program = grower(kept / "grower.mprof", MPROF_CHECKPOINT_GROWTH="off", MPROF_CHECKPOINT_INTERVAL="off")
    request = request_of(program.pid)
    # The answer's directory has gone: the monitor cannot create its temporary file.
    write_request(request, tmp_path / "gone" / "answer.mprof")
    wait_for(lambda: threads_of(program.pid) == 2, "the monitor's answering thread")
    # A directory in the answer's place: the temporary file is made, and
    # removed as the rename is refused, which changes its directory.
    (tmp_path / "directory" / "answer.mprof").mkdir(parents=True)
    os.utime(tmp_path / "directory", (0, 0))  # any change of its entries makes it now
    write_request(request, tmp_path / "directory" / "answer.mprof")
    wait_for(lambda: (tmp_path / "directory").stat().st_mtime_ns != 0, "the answer's attempt")
    # Then a request that can be answered: the thread is still answering.
    write_request(request, tmp_path / "answer.mprof")
    wait_for((tmp_path / "answer.mprof").exists, "the answer")
    request.unlink()

    # The process's own file cannot be written: that is said, once.
    shutil.rmtree(kept)
    (tmp_path / "stop").touch()
    out, err = program.communicate(timeout=60)
    assert program.returncode == 3
    assert err == f"mprof: cannot create {kept}/grower.mprof.tmp.{program.pid}.0: No such file or directory\n"


@pytest.mark.slow
def test_a_request_dated_in_the_future_does_not_stop_the_answers_after_it(
        grower: Callable[..., subprocess.Popen[str]], tmp_path: Path) -> None:
    """A request whose modification time is a day ahead (a clock stepped
    back since, a file restored from elsewhere) is answered, and so is
    each change after it, though every later time is earlier."""
    program = grower(tmp_path / "grower.mprof")
    request, answer = request_of(program.pid), tmp_path / "answer.mprof"
    aside = tmp_path / "request"
    aside.write_text(f"{answer}\n")
    ahead = time.time() + 86400
    os.utime(aside, (ahead, ahead))
    aside.rename(request)
    wait_for(answer.exists, "the answer to the request dated ahead")
    for asked in range(3):
        answer.unlink()
        os.utime(request)  # asked again as mprof top asks: now, a day before the request's date
        wait_for(answer.exists, f"the answer to request {asked + 2}")


def write_request_as_nobody(request: Path, target: Path) -> None:
    """A request of nobody's, written whole, its directory made as a viewer
    of nobody's makes it."""
    as_nobody(f"mkdir -p -m 700 {NOBODY_REQUESTS}; printf '%s\\n' {target} > {request}.aside && "
              f"mv {request}.aside {request}")


def ready(process: subprocess.Popen[str]) -> None:
    """Waits for dropper's "ready"; the bound only catches a hang."""
    assert process.stdout is not None
    assert select.select([process.stdout], [], [], 60)[0], "dropper never got ready"
    assert process.stdout.readline() == "ready\n"


@pytest.mark.slow
def test_a_process_that_changed_its_credentials_or_is_not_dumpable_answers_no_one(
        targets: Targets, public: Path) -> None:
    """A daemon started as root that drops to nobody is not dumpable: the
    kernel keeps its memory map from nobody, and so does the monitor, from
    nobody's request and from root's; one that makes itself dumpable again,
    having dropped root or only its group, has still changed its
    credentials since it started; one that keeps its user but makes itself
    not dumpable answers no one either.  A process started as nobody
    answers nobody, alongside: the others had as long."""
    dropper = public / "dropper"
    shutil.copy(targets.build("dropper"), dropper)  # where nobody can run it
    dropper.chmod(0o755)
    started: dict[str, subprocess.Popen[str]] = {}
    made = not NOBODY_REQUESTS.exists()
    try:
        for mode in ("drop", "drop-dumpable", "regroup-dumpable", "undumpable"):
            started[mode] = subprocess.Popen([dropper, mode], env=monitor_env(public / f"{mode}.mprof"), cwd=public,
                                             stdout=subprocess.PIPE, text=True)
        started["plain"] = subprocess.Popen([dropper, "plain"], env=monitor_env(public / "plain.mprof"), cwd=public,
                                            stdout=subprocess.PIPE, text=True, user=NOBODY, group=NOBODY,
                                            extra_groups=[])
        for process in started.values():
            ready(process)
        # Requests of nobody's and root's where mprof(5) says, and one of the
        # process's user's now where mprof looked before issue 47.
        asked = []
        for mode, process in started.items():
            now = "root" if mode in ("regroup-dumpable", "undumpable") else "nobody"
            for user, where, request in (("nobody", "tmp", NOBODY_REQUESTS / f"mprof-watch.{process.pid}"),
                                         ("root", "run", request_of(process.pid)),
                                         (now, "old", Path(OLD_PLACE.format(pid=process.pid)))):
                answer = public / f"{mode}-{user}-{where}.mprof"
                asked.append(answer)
                if user == "nobody":
                    write_request_as_nobody(request, answer)
                else:
                    write_request(request, answer)
        answered = public / "plain-nobody-tmp.mprof"
        began = time.monotonic()
        wait_for(lambda: any(answer.exists() for answer in asked if answer.name.startswith("plain-")),
                 "an answer of the process started as nobody")
        took = time.monotonic() - began
        never_within(lambda: any(answer.exists() for answer in asked if answer != answered), max(2.0, 3 * took))
        assert [answer.name for answer in asked if answer.exists()] == [answered.name]
        header = datafile.read(answered).header
        assert not header.final and not header.checkpoint  # a snapshot
    finally:
        for process in started.values():
            process.kill()
            process.communicate()
            for place in (NOBODY_REQUESTS / f"mprof-watch.{process.pid}", Path(OLD_PLACE.format(pid=process.pid)),
                          request_of(process.pid)):
                place.unlink(missing_ok=True)
        if made:
            shutil.rmtree(NOBODY_REQUESTS, ignore_errors=True)


@pytest.mark.slow
def test_another_user_cannot_keep_root_from_watching(grower: Callable[..., subprocess.Popen[str]],
                                                     tmp_path: Path, squatted: list[Path]) -> None:
    """Another user makes directories where root's requests go, or went
    (before issue 47): root's viewer (mprof top's, --live's and --push's
    code) asks as before and gets each answer."""
    program = grower(tmp_path / "grower.mprof")
    squatted.append(Path(OLD_PLACE.format(pid=program.pid)))
    as_nobody(f"mkdir {OLD_PLACE.format(pid=program.pid)}; mkdir /tmp/mprof-0; "
              f"mkdir {request_of(program.pid)}; true")
    with Watch(program.pid) as watch:
        allocs = []
        for asked in range(3):
            wait_for(lambda: watch.answered() is not None, f"answer {asked + 1}")
            allocs.append(datafile.read(watch.answer).summary["allocs"])
            watch.ask()
    assert allocs == sorted(allocs)  # newer figures each time (grower allocates, unless it waited meanwhile)


@pytest.mark.slow
def test_a_directory_others_may_use_is_not_looked_in(grower: Callable[..., subprocess.Popen[str]],
                                                    tmp_path: Path) -> None:
    """mprof(5)'s last place, /tmp/mprof-UID, is looked in only while it is
    the user's with no permission for group or others: a request there is
    answered once the directory is made private, not before."""
    program = grower(tmp_path / "grower.mprof")
    shared = Path("/tmp/mprof-0")
    made = not shared.exists()
    shared.mkdir(exist_ok=True)
    assert shared.lstat().st_uid == 0 and stat.S_ISDIR(shared.lstat().st_mode)
    mode = stat.S_IMODE(shared.stat().st_mode)
    request, answer = shared / f"mprof-watch.{program.pid}", tmp_path / "answer.mprof"
    try:
        shared.chmod(0o755)
        write_request(request, answer)
        never_within(answer.exists, 2.0)
        assert not answer.exists(), "answered a request others could read"
        shared.chmod(0o700)
        wait_for(answer.exists, "the answer once the directory is private")
    finally:
        request.unlink(missing_ok=True)
        if made:
            shared.rmdir()
        else:
            shared.chmod(mode)


@pytest.mark.slow
def test_top_says_why_a_daemon_that_dropped_root_cannot_be_watched(targets: Targets, public: Path) -> None:
    """mprof top refuses, in one line, a process that dropped root for
    nobody: to root, it is another user's; to nobody, it is not dumpable."""
    dropper = subprocess.Popen([targets.build("dropper"), "drop"], env=monitor_env(public / "drop.mprof"),
                               cwd=public, stdout=subprocess.PIPE, text=True)
    try:
        ready(dropper)
        top = f"{MPROF} top {dropper.pid}"
        for user, said in ((0, f"mprof: process {dropper.pid}: belongs to another user (uid {NOBODY}), and the "
                               "monitor answers only the user it runs as"),
                           (NOBODY, f"mprof: process {dropper.pid}: is not dumpable (it changed its user or group, "
                                    "or made itself so), and the monitor answers no one then")):
            refused = subprocess.run(["script", "-qec", top, "/dev/null"], capture_output=True, text=True,
                                     timeout=60, user=user, group=user, extra_groups=[], cwd="/")
            assert (refused.returncode, refused.stdout.replace("\r\n", "\n")) == (1, said + "\n")
    finally:
        dropper.kill()
        dropper.communicate()


@pytest.mark.slow
def test_top_names_the_request_directory_another_user_made_first(targets: Targets, public: Path) -> None:
    """A user with no runtime directory asks in /tmp/mprof-UID; another user
    can make that first, and the viewer then refuses it by name, in one
    line, rather than asking where that user could read or remove it."""
    user = NOBODY - 1  # no runtime directory, and no other process of its own here
    shared = Path(f"/tmp/mprof-{user}")
    shutil.rmtree(shared, ignore_errors=True)
    as_nobody(f"mkdir -m 700 {shared}")
    dropper = public / "dropper"
    shutil.copy(targets.build("dropper"), dropper)  # where that user can run it
    dropper.chmod(0o755)
    process = subprocess.Popen([dropper, "plain"], env=monitor_env(public / "plain.mprof"), cwd=public,
                               stdout=subprocess.PIPE, text=True, user=user, group=user, extra_groups=[])
    try:
        ready(process)
        refused = subprocess.run(["script", "-qec", f"{MPROF} top {process.pid}", "/dev/null"], capture_output=True,
                                 text=True, timeout=60, user=user, group=user, extra_groups=[], cwd="/")
        assert (refused.returncode, refused.stdout.replace("\r\n", "\n")) == (
            1, f"mprof: {shared}: a directory of uid {NOBODY}'s, not yours: requests to your processes go there "
               "only when it is a directory of yours that only you can use; have it removed (root can) and try again\n")
    finally:
        process.kill()
        process.communicate()
        shutil.rmtree(shared, ignore_errors=True)



@pytest.mark.slow
def test_a_request_that_says_classify_is_answered_with_the_leak_kinds(targets: Targets, tmp_path: Path) -> None:
    """mprof(5)'s second line: a request of one line is answered without
    LEAK, one whose second line is classify with it, the program's known
    blocks each of their kind; a request of one line after it, or of
    another second line, without it again."""
    with losing_server(targets, tmp_path / "server.mprof", MPROF_CHECKPOINT_GROWTH="off",
                       MPROF_CHECKPOINT_INTERVAL="off") as program:
        request = request_of(program.pid)
        answers = [tmp_path / f"answer{n}.mprof" for n in range(4)]
        try:
            for answer, second in zip(answers, ("", "classify\n", "", "classifying\n"), strict=True):
                aside = request.with_name(f".{request.name}.aside")
                aside.write_text(f"{answer}\n{second}")
                aside.rename(request)
                wait_for(answer.exists, f"{answer.name}, to a request whose second line is {second!r}")
                if answer == answers[0]:
                    # The monitor's answering thread is there: the program allocates no more.
                    assert line_of(program) == "quiet\n"
        finally:
            request.unlink(missing_ok=True)
    plain, classified, after, other = (datafile.read(answer) for answer in answers)
    assert plain.leaks is None and after.leaks is None and other.leaks is None
    assert classified.leaks is not None
    assert not classified.header.final and not classified.header.checkpoint  # a snapshot
    assert (classified.leaks.threads_stopped, classified.leaks.threads_unstopped) == (1, 0)
    sample = take(answers[1])
    assert sample.classified
    assert {names: figures.kinds for names, figures in sample.paths.items() if figures.live_blocks} == KINDS
