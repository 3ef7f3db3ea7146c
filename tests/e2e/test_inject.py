"""mprof-inject (inject/inject.c) in a program that takes real-time signals
as servers and daemons do (tests/targets/rt_signals.c: a POSIX timer whose
handler follows sival_ptr, sigqueue'd values that must come in order with
their code), while rt_sender queues them all along: every signal that
comes while its thread runs the calls arrives after them with its sender's
siginfo, and whatever moment mprof-inject is killed or interrupted at, the
thread goes back to what it was doing with its mask, alternate stack and
floating-point control as they were."""

from __future__ import annotations

import ctypes
import functools
import operator
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e_support import (
    INJECT_HELPER,
    SIGNALS_OWN_STATE,
    SignalReceiver,
    Targets,
    ask_line,
    inject_probe,
    injection,
    signal_receiver,
)

# A kill or a deferred signal at each of these is tried 20 times.
ROUNDS = 20
SYS_FUTEX = 202  # x86-64's number, as /proc/PID/syscall gives it


@pytest.fixture
def receiver(targets: Targets) -> Iterator[SignalReceiver]:
    with signal_receiver(targets) as started:
        yield started


def fresh_helper(directory: Path, n: int) -> Path:
    """A copy of the helper the process has not loaded: each injection then
    has it load one, the step at which most can go wrong."""
    copy = directory / f"helper-{n}.so"
    shutil.copyfile(INJECT_HELPER, copy)
    return copy


@pytest.mark.slow
def call_probe_wait(pid: int, library: Path, directory: Path, n: int, killed: bool) -> None:
    """The n-th injected call of probe_wait, which waits inside the process
    until told: mprof-inject killed while the call waits (the call then
    finishes alone), or left to finish and print the call's result."""
    directory.mkdir()
    started = subprocess.Popen(injection(pid, INJECT_HELPER, library, "probe_wait", directory, loaded=n > 0),
                               stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (directory / "inside").exists():
        assert started.poll() is None and time.monotonic() < deadline, f"call {n} never started"
        time.sleep(0.001)
    if killed:
        started.kill()
    (directory / "release").touch()
    out = started.communicate(timeout=60)[0]
    assert (started.returncode, out) == ((-signal.SIGKILL, "") if killed else (0, "7\n")), n


def test_signals_that_come_during_the_calls_arrive_after_them_with_their_siginfo(
        receiver: SignalReceiver, targets: Targets, tmp_path: Path) -> None:
    library = inject_probe(targets)
    for n in range(ROUNDS):
        done = subprocess.run(injection(receiver.pid, fresh_helper(tmp_path, n), library, "probe_twice", str(n),
                                        loaded=n > 0), capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (0, f"{2 * n + 1}\n", ""), n
        receiver.runs_as_before(f"injection {n}")
    receiver.finish()


@pytest.mark.slow
def test_mprof_inject_killed_at_any_of_its_steps_leaves_the_thread_as_it_was(
        receiver: SignalReceiver, targets: Targets, tmp_path: Path) -> None:
    """kill_at_syscall kills mprof-inject before each of the system calls
    it makes from its first ptrace on, in turn: seizing, stopping, laying
    out the frame, setting the registers and the mask, each of the calls'
    own system calls, the return, putting the thread back."""
    library, killer = inject_probe(targets), targets.build("kill_at_syscall")
    whole = subprocess.run([killer, "1000000", *injection(receiver.pid, fresh_helper(tmp_path, 0), library,
                                                            "probe_twice", "5")],
                           capture_output=True, text=True, timeout=120)
    last = whole.stdout.splitlines()[-1:]
    assert whole.stdout == "11\n" + "".join(last) + "\n" and last[0].startswith("finished after "), whole.stdout
    steps = int(last[0].split()[2])
    assert steps > 40, "fewer steps than seizing, stopping, two calls and the return take"
    for step in range(1, steps + 1):
        killed = subprocess.run([killer, str(step), *injection(receiver.pid, fresh_helper(tmp_path, step), library,
                                                                 "probe_twice", "5")],
                                capture_output=True, text=True, timeout=120)
        # Killed after it printed the call's result, at the steps after the
        # thread was let go.  The signals that come meanwhile vary the count
        # of system calls: a run may finish before the last steps.
        finished = re.fullmatch(r"11\nfinished after (\d+)\n", killed.stdout)
        assert killed.stdout in ("killed\n", "11\nkilled\n") or (finished and int(finished[1]) < step), \
            (step, killed.stdout, killed.stderr)
        receiver.runs_as_before(f"killed before its system call {step}")
    receiver.finish()


def _signals_by_default() -> None:
    """In mprof-inject, before its exec: a run started in the background
    of a shell (make check &, a CI runner's) has SIGINT and SIGQUIT
    ignored, nohup SIGHUP, and an ignored signal stays ignored across
    exec, so that mprof-inject would rightly go on to the end."""
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


@pytest.mark.slow
def test_killed_or_interrupted_while_the_thread_runs_the_call(
        receiver: SignalReceiver, targets: Targets, tmp_path: Path) -> None:
    """SIGKILL ends mprof-inject at once and the thread returns by itself
    when the call ends; SIGINT, SIGTERM and SIGHUP wait until the thread is
    back, then end mprof-inject once it has said what the call returned."""
    library = inject_probe(targets)
    endings = [signal.SIGKILL] * ROUNDS + [signal.SIGINT, signal.SIGTERM, signal.SIGHUP] * (ROUNDS // 3 + 1)
    for n, ending in enumerate(endings):
        directory = tmp_path / f"call-{n}"
        directory.mkdir()
        started = subprocess.Popen(injection(receiver.pid, INJECT_HELPER, library, "probe_wait", directory,
                                             loaded=n > 0), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=_signals_by_default)
        began = time.monotonic()
        deadline = began + 60
        while not (directory / "inside").exists():
            assert started.poll() is None, started.communicate()
            now = time.monotonic()
            assert now < deadline, f"call {n} never started: {began} {now} {deadline}"
            time.sleep(0.001)
        started.send_signal(ending)
        if ending != signal.SIGKILL:
            # It waits for the call, which waits for the release.
            assert started.poll() is None
        (directory / "release").touch()
        out, err = started.communicate(timeout=60)
        if ending == signal.SIGKILL:
            assert started.returncode == -signal.SIGKILL
        else:
            assert (started.returncode, out, err) == (-ending, "7\n", ""), ending
        receiver.runs_as_before(f"{signal.Signals(ending).name} in call {n}")
    receiver.finish()


def test_a_library_not_loaded_is_refused_before_anything_is_called(receiver: SignalReceiver, targets: Targets,
                                                                    tmp_path: Path) -> None:
    """--loaded looks in the process's memory map with its thread stopped:
    the helper is not even loaded (as after an exec, the new program is
    left alone)."""
    helper = fresh_helper(tmp_path, 0)
    library = inject_probe(targets)
    done = subprocess.run(injection(receiver.pid, helper, library, "probe_twice", "1", loaded=True),
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (
        3, "", f"process {receiver.pid}: cannot load {library}: not loaded\n")
    maps = Path(f"/proc/{receiver.pid}/maps").read_text()
    assert str(helper) not in maps and str(library) not in maps
    receiver.runs_as_before("refused")


@pytest.mark.slow
@pytest.mark.parametrize(("waiter_name", "flags", "answer"), [
    ("vector_waiter", ("-mavx",), "ymm7 ok xmm12 ok\n"),
    # The frame must hold the XSAVE image up to the last component in use:
    # AVX's, with the AVX-512 ones (past it) at rest, or those.
    ("vector_waiter", ("-mavx", "-DAVX512_AT_REST"), "ymm7 ok xmm12 ok\n"),
    ("zmm_waiter", ("-mavx512f",), "zmm3 ok zmm20 ok k2 ok\n")], ids=["avx", "avx-alone", "avx512"])
def test_a_vector_register_in_use_across_the_system_call_is_kept(
        targets: Targets, tmp_path: Path, waiter_name: str, flags: tuple[str, ...], answer: str) -> None:
    """The thread's floating-point and vector state comes back as it was,
    from mprof-inject or, when it was killed, from the signal frame,
    though the call filled every vector register (inject_probe.c)."""
    if "-mavx512f" in flags and " avx512f" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("this CPU has no AVX-512")
    library = inject_probe(targets)
    waiter = subprocess.Popen([targets.build(waiter_name, *flags)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert waiter.stdin is not None and waiter.stdout is not None
        assert waiter.stdout.readline() == "ready\n"
        for n in range(2 * ROUNDS):
            killed = n % 2 == 0
            call_probe_wait(waiter.pid, library, tmp_path / f"call-{n}", n, killed)
            waiter.stdin.write("x")
            waiter.stdin.flush()
            assert waiter.stdout.readline() == answer, \
                f"call {n}, mprof-inject {'killed' if killed else 'alive'}"
    finally:
        waiter.kill()
        waiter.wait()


def signal_mask(number: int) -> int:
    return 1 << (number - 1)


def caught_signals(pid: int) -> int:
    """The signals the process has handlers for, from the kernel."""
    line = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("SigCgt:"))
    return int(line.split()[1], 16)


@pytest.mark.slow
@pytest.mark.parametrize("fault", [signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGTRAP])
def test_a_fault_in_the_call_keeps_the_programs_handler_and_never_runs_it(
        receiver: SignalReceiver, targets: Targets, fault: signal.Signals) -> None:
    """probe_fault installs a handler of the fault's signal, then faults so
    as to raise it (reads address 0, a page past its file's end, divides
    by 0, runs ud2 or int3): the thread faults with the signal unblocked
    (blocked, the kernel would reset the handler to the default),
    mprof-inject stops it at the fault and puts it back without the signal
    (the handler would end the process with status 86), and says so with
    status 4."""
    library = inject_probe(targets)
    before = caught_signals(receiver.pid)
    assert not before & signal_mask(fault)
    done = subprocess.run(injection(receiver.pid, INJECT_HELPER, library, "probe_fault", fault.name[3:]),
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (
        4, "", f"process {receiver.pid}: thread {receiver.pid} faulted in the helper (signal {fault.value})\n")
    assert caught_signals(receiver.pid) == before | signal_mask(fault)
    receiver.runs_as_before("faulted")
    assert receiver.ask("count").endswith(" wrong 0 timer-wrong 0")
    assert receiver.ask("state") == SIGNALS_OWN_STATE


def _sigint_by_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def blocked_signals(pid: int) -> int:
    line = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("SigBlk:"))
    return int(line.split()[1], 16)


def test_ctrl_c_while_no_thread_waits_ends_the_search_at_once(targets: Targets) -> None:
    """The spinner's only thread never waits in a system call: SIGINT,
    once mprof-inject holds it back (it blocks it before it looks for a
    thread), ends the search with the reason, long before the 5 s it would
    look, and then mprof-inject itself."""
    spinner = subprocess.Popen([targets.build("spinner")], stdout=subprocess.PIPE, text=True)
    try:
        assert spinner.stdout is not None and spinner.stdout.readline() == "ready\n"
        started = subprocess.Popen(injection(spinner.pid, INJECT_HELPER, inject_probe(targets), "probe_twice", "1"),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=_sigint_by_default)
        deadline = time.monotonic() + 60
        while not blocked_signals(started.pid) & signal_mask(signal.SIGINT):
            assert started.poll() is None and time.monotonic() < deadline, started.communicate()
            time.sleep(0.001)
        started.send_signal(signal.SIGINT)
        out, err = started.communicate(timeout=60)
        assert (started.returncode, out, err) == (
            -signal.SIGINT, "", f"process {spinner.pid}: interrupted before any thread was stopped\n")
    finally:
        spinner.kill()
        spinner.wait()


@pytest.mark.slow
def test_a_sleep_the_call_interrupted_goes_on_when_mprof_inject_is_killed_or_not(targets: Targets,
                                                                                  tmp_path: Path) -> None:
    """napper's thread waits in poll with a timeout, which the kernel,
    interrupted, continues through the thread's restart block, as it does
    nanosleep: the calls may use that block themselves (a nanosleep of
    theirs resets it), and the signal frame, all the thread has when
    mprof-inject is killed in the call, cannot carry it.  Either way the
    wait starts again from the start: no poll fails, or answers more than
    its one descriptor (the restart code itself)."""
    library = inject_probe(targets)
    napper = subprocess.Popen([targets.build("napper")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert napper.stdout is not None and napper.stdout.readline() == "ready\n"
        for n in range(4):
            killed = n % 2 == 0
            call_probe_wait(napper.pid, library, tmp_path / f"call-{n}", n, killed)
            # Answered by the thread after the call, past the sleep it was in.
            assert ask_line(napper, "count") == "failed 0", f"call {n}, mprof-inject {'killed' if killed else 'alive'}"
    finally:
        napper.kill()
        napper.wait()


@pytest.mark.parametrize("name", ["strace", "s"])
def test_a_process_traced_already_is_refused_with_status_1(targets: Targets, tmp_path: Path, name: str) -> None:
    """ptrace refuses a second tracer: mprof-inject says which one holds
    the process, by its number and its name (strace, or a copy of it
    named s: a name of one letter is said as well), and exits 1 (refused),
    not 4 (failed)."""
    strace = shutil.which("strace")
    assert strace is not None, "strace is missing: make check's set-up installs it (TEST_PACKAGES)"
    copy = tmp_path / name
    shutil.copyfile(strace, copy)
    copy.chmod(0o755)
    napper = subprocess.Popen([targets.build("napper")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    tracer = None
    try:
        assert napper.stdout is not None and napper.stdout.readline() == "ready\n"
        tracer = subprocess.Popen([copy, "-o", os.devnull, "-p", str(napper.pid)], stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while f"TracerPid:\t{tracer.pid}\n" not in Path(f"/proc/{napper.pid}/status").read_text():
            assert time.monotonic() < deadline, "strace did not attach"
            time.sleep(0.01)
        refused = subprocess.run(injection(napper.pid, INJECT_HELPER, inject_probe(targets), "probe_twice", "1"),
                                 capture_output=True, text=True, timeout=120)
        assert (refused.returncode, refused.stdout, refused.stderr) == (
            1, "", f"process {napper.pid}: it is traced already, by process {tracer.pid} ({name}): a process has one "
                   "tracer at a time; end that one (a debugger, strace) first\n")
    finally:
        for started in (tracer, napper):
            if started:
                started.kill()
                started.wait()


def test_the_loaders_reason_is_said_whole_to_its_room(targets: Targets, tmp_path: Path) -> None:
    """The helper hands back dlerror's reason for a library it cannot load
    in a room of 400 bytes: the 399 first are said, from a reason longer
    than that (a library needing a function of a 420-character name), as
    this process's own dlopen gives it."""
    name = "missing_" + "f" * 412
    library = tmp_path / "libmissing.so"
    shutil.copyfile(targets.build("libmissing", f"-DMISSING_NAME={name}", source="missing_symbol.c", shared=True),
                    library)
    with pytest.raises(OSError) as refused:
        ctypes.CDLL(str(library), mode=os.RTLD_NOW)
    reason = str(refused.value).replace(str(library), "./libmissing.so")
    assert len(reason) > 400 and reason.endswith(name)
    napper = subprocess.Popen([targets.build("napper")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=tmp_path)
    try:
        assert napper.stdout is not None and napper.stdout.readline() == "ready\n"
        done = subprocess.run(injection(napper.pid, INJECT_HELPER, "./libmissing.so", "call_missing"),
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (
            3, "", f"process {napper.pid}: cannot load ./libmissing.so: {reason[:399]}\n")
    finally:
        napper.kill()
        napper.wait()


@pytest.mark.slow
def test_without_process_vm_readv_and_writev_the_memory_goes_by_ptrace(
        receiver: SignalReceiver, targets: Targets, tmp_path: Path) -> None:
    """Where the kernel has no process_vm_readv and process_vm_writev (or a
    seccomp profile denies them, as no_cross_memory's filter does), the
    frame and strings are written and the restorer's code and the answer
    read a word at a time with ptrace: the calls go as anywhere else."""
    library, wrapper = inject_probe(targets), targets.build("no_cross_memory")
    for n in range(2):
        done = subprocess.run([wrapper, *injection(receiver.pid, fresh_helper(tmp_path, n), library, "probe_twice",
                                                   str(20 + n), loaded=n > 0)],
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (0, f"{41 + 2 * n}\n", ""), n
        receiver.runs_as_before(f"injection {n}")
    assert receiver.ask("count").endswith(" wrong 0 timer-wrong 0")
    assert receiver.ask("state") == SIGNALS_OWN_STATE


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="a pid namespace of its own needs root")
def test_the_first_process_of_a_pid_namespace_is_called_into(targets: Targets) -> None:
    """In a container's pid namespace, the program mprof attach is asked
    for is often process 1 there: its thread, waiting in poll, is
    taken as any other process's."""
    library = inject_probe(targets)
    init = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", targets.build("napper")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert init.stdout is not None and init.stdout.readline() == "ready\n"
        [napper] = Path(f"/proc/{init.pid}/task/{init.pid}/children").read_text().split()
        assert f"NSpid:\t{napper}\t1\n" in Path(f"/proc/{napper}/status").read_text()
        done = subprocess.run(["nsenter", "--target", napper, "--pid", "--mount",
                               *injection(1, INJECT_HELPER, library, "probe_twice", "4")],
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (0, "9\n", "")
        assert ask_line(init, "count") == "failed 0"
    finally:
        init.kill()
        init.wait()


@pytest.mark.slow
def test_a_thread_waiting_in_read_is_taken_when_the_main_one_waits_in_a_futex(targets: Targets) -> None:
    """joiner's main thread waits in pthread_join, a futex (where the
    allocator may hold its lock): its reader thread, waiting in read, is
    the one that makes the call, and goes on reading after."""
    joiner = subprocess.Popen([targets.build("joiner")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert joiner.stdout is not None and joiner.stdout.readline() == "ready\n"
        assert ask_line(joiner, "x") == "line"
        done = subprocess.run(injection(joiner.pid, INJECT_HELPER, inject_probe(targets), "probe_twice", "4"),
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (0, "9\n", "")
        assert ask_line(joiner, "y") == "line"
    finally:
        joiner.kill()
        joiner.wait()


def waiting_in(pid: int) -> list[str]:
    """The system call each thread of pid waits in, by number, or its state."""
    return sorted(Path(f"/proc/{pid}/task/{task}/syscall").read_text().split()[0]
                  for task in os.listdir(f"/proc/{pid}/task"))


@pytest.mark.slow
def test_no_thread_is_taken_while_every_one_waits_in_a_futex(targets: Targets) -> None:
    """With joiner's two threads in futexes, mprof-inject looks for 5 s
    and gives up, saying why, with status 4: no call is made."""
    joiner = subprocess.Popen([targets.build("joiner")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert joiner.stdout is not None and joiner.stdout.readline() == "ready\n"
        assert ask_line(joiner, "park") == "parked"
        futex = str(SYS_FUTEX)
        deadline = time.monotonic() + 60
        while waiting_in(joiner.pid) != [futex, futex]:
            assert time.monotonic() < deadline, waiting_in(joiner.pid)
            time.sleep(0.001)
        done = subprocess.run(injection(joiner.pid, INJECT_HELPER, inject_probe(targets), "probe_twice", "4"),
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (
            4, "", f"process {joiner.pid}: none of its threads waited in a system call for 5 s (each was running, "
                   "or in the allocator's); try again when it is less busy\n")
    finally:
        joiner.kill()
        joiner.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="running mprof-inject as another user needs root")
@pytest.mark.parametrize("user", [1, 65534], ids=["daemon", "nobody"])
def test_another_users_process_is_refused_for_what_it_is(targets: Targets, user: int) -> None:
    """mprof-inject run by daemon or nobody on root's process may neither
    read its memory map nor trace it: refused with status 1, in ptrace's
    words, not taken for a program without the C library."""
    napper = subprocess.Popen([targets.build("napper")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert napper.stdout is not None and napper.stdout.readline() == "ready\n"
        refused = subprocess.run(injection(napper.pid, INJECT_HELPER, inject_probe(targets), "probe_twice", "1"),
                                 capture_output=True, text=True, timeout=120, user=user, group=user, extra_groups=[])
        assert (refused.returncode, refused.stdout, refused.stderr) == (
            1, "", f"process {napper.pid}: it belongs to another user (uid 0): run mprof attach as that user, "
                   "or as root\n")
        assert ask_line(napper, "count") == "failed 0"
    finally:
        napper.kill()
        napper.wait()


def test_a_process_that_is_not_there_is_refused(targets: Targets) -> None:
    pid = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    refused = subprocess.run(injection(pid, INJECT_HELPER, inject_probe(targets), "probe_twice", "1"),
                             capture_output=True, text=True, timeout=120)
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", f"process {pid}: no such process\n")


def pending_signals(pid: int) -> int:
    """The signals pending for pid's main thread or for the whole process."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return functools.reduce(operator.or_, (int(line.split()[1], 16) for line in status
                                           if line.startswith(("SigPnd:", "ShdPnd:"))))


@pytest.mark.slow
def test_a_fault_signal_another_process_sends_during_the_call_arrives_after_it(targets: Targets,
                                                                                 tmp_path: Path) -> None:
    """SIGSEGV stays unblocked during the calls (a fault must not find it
    blocked): one that another process sends meanwhile, with kill or with
    sigqueue, is taken off the thread and sent again once it is back, the
    queued one with its value, and fault_counter's handler counts it once."""
    libc = ctypes.CDLL(None, use_errno=True)
    library = inject_probe(targets)
    counter = subprocess.Popen([targets.build("fault_counter")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    try:
        assert counter.stdout is not None and counter.stdout.readline() == "ready\n"
        for n, expected in enumerate(["queued 0 other 1", "queued 1 other 1"]):
            directory = tmp_path / f"call-{n}"
            directory.mkdir()
            started = subprocess.Popen(injection(counter.pid, INJECT_HELPER, library, "probe_wait", directory,
                                                 loaded=n > 0), stdout=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 60
            while not (directory / "inside").exists():
                assert started.poll() is None and time.monotonic() < deadline, f"call {n} never started"
                time.sleep(0.001)
            if n == 0:
                os.kill(counter.pid, signal.SIGSEGV)
            else:
                assert libc.sigqueue(counter.pid, signal.SIGSEGV, ctypes.c_long(5)) == 0, ctypes.get_errno()
            # Taken off the thread, as it comes, while the call goes on.
            while pending_signals(counter.pid) & signal_mask(signal.SIGSEGV):
                assert time.monotonic() < deadline, f"call {n}: the signal stays pending"
                time.sleep(0.001)
            (directory / "release").touch()
            out = started.communicate(timeout=60)[0]
            assert (started.returncode, out) == (0, "7\n"), n
            assert ask_line(counter, "count") == expected, n
    finally:
        counter.kill()
        counter.wait()


@pytest.mark.slow
def test_a_function_the_library_lacks_is_missing(targets: Targets) -> None:
    """The library loads, the function is not in it: status 3, and the
    line names both."""
    library = inject_probe(targets)
    napper = subprocess.Popen([targets.build("napper")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert napper.stdout is not None and napper.stdout.readline() == "ready\n"
        done = subprocess.run(injection(napper.pid, INJECT_HELPER, library, "probe_thrice", "1"), capture_output=True,
                              text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (
            3, "", f"process {napper.pid}: {library} has no function probe_thrice\n")
        assert ask_line(napper, "count") == "failed 0"
    finally:
        napper.kill()
        napper.wait()


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="a pid namespace of its own needs root")
def test_a_tracer_that_is_process_1_is_named(targets: Targets) -> None:
    """In a pid namespace whose first process, strace, traces the program
    (process 2 there), mprof-inject run inside it names process 1 as the
    tracer that holds it."""
    init = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c",
                             # A background command's input is /dev/null unless given otherwise.
                             f'exec 3<&0; {targets.build("napper")} <&3 3<&- & exec 3<&- strace -o /dev/null -p $!'],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert init.stdout is not None and init.stdout.readline() == "ready\n"
        [strace] = Path(f"/proc/{init.pid}/task/{init.pid}/children").read_text().split()
        deadline = time.monotonic() + 60
        while not (napper := Path(f"/proc/{strace}/task/{strace}/children").read_text().split()) or \
                f"TracerPid:\t{strace}\n" not in Path(f"/proc/{napper[0]}/status").read_text():
            assert time.monotonic() < deadline, "strace did not attach"
            time.sleep(0.01)
        assert f"NSpid:\t{napper[0]}\t2\n" in Path(f"/proc/{napper[0]}/status").read_text()
        refused = subprocess.run(["nsenter", "--target", strace, "--pid", "--mount",
                                  *injection(2, INJECT_HELPER, inject_probe(targets), "probe_twice", "1")],
                                 capture_output=True, text=True, timeout=120)
        assert (refused.returncode, refused.stdout, refused.stderr) == (
            1, "", "process 2: it is traced already, by process 1 (strace): a process has one tracer at a time; "
                   "end that one (a debugger, strace) first\n")
    finally:
        init.kill()
        init.wait()


@pytest.mark.slow
def test_more_fault_signals_than_are_kept_during_the_call_arrive_as_one(targets: Targets, tmp_path: Path) -> None:
    """40 SIGSEGVs sent with kill during one call, each once the one before
    was taken off the thread: mprof-inject keeps the first 32 to send again
    (TAKEN_MAX) and drops the rest, the standard signal being one pending
    at most; sent again while the thread is still stopped, they arrive as
    one, which fault_counter's handler counts."""
    counter = subprocess.Popen([targets.build("fault_counter")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    try:
        assert counter.stdout is not None and counter.stdout.readline() == "ready\n"
        directory = tmp_path / "call"
        directory.mkdir()
        started = subprocess.Popen(injection(counter.pid, INJECT_HELPER, inject_probe(targets), "probe_wait",
                                             directory), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not (directory / "inside").exists():
            assert started.poll() is None and time.monotonic() < deadline, started.communicate()
            time.sleep(0.001)
        for n in range(40):
            os.kill(counter.pid, signal.SIGSEGV)
            while pending_signals(counter.pid) & signal_mask(signal.SIGSEGV):
                assert time.monotonic() < deadline, f"signal {n} stays pending"
                time.sleep(0.001)
        (directory / "release").touch()
        out, err = started.communicate(timeout=60)
        assert (started.returncode, out, err) == (0, "7\n", "")
        try:
            answer = ask_line(counter, "count")
        except BrokenPipeError:
            answer = f"ended with status {counter.wait(timeout=60)}"
        assert answer == "queued 0 other 1"
    finally:
        counter.kill()
        counter.wait()


@pytest.mark.slow
def test_a_system_call_a_seccomp_filter_traps_is_answered_by_the_programs_handler(targets: Targets,
                                                                                  tmp_path: Path) -> None:
    """trapped_writes's seccomp filter traps every write with SIGSYS, which
    its handler counts and answers as if written: one the called function
    makes (probe_write) goes to that handler, as a sandbox needs (it is no
    fault: mprof-inject passes it on), and the calls themselves, to their
    return through the restorer's rt_sigreturn, make none."""
    library = inject_probe(targets)
    trapped = subprocess.Popen([targets.build("trapped_writes")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    try:
        assert trapped.stdout is not None and trapped.stdout.readline() == "ready\n"
        done = subprocess.run(injection(trapped.pid, fresh_helper(tmp_path, 0), library, "probe_write", "12345"),
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (0, "5\n", "")
        assert ask_line(trapped, "count") == "writes 1"
        done = subprocess.run(injection(trapped.pid, fresh_helper(tmp_path, 1), library, "probe_twice", "4",
                                        loaded=True), capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (0, "9\n", "")
        assert ask_line(trapped, "count") == "writes 1"
    finally:
        trapped.kill()
        trapped.wait()
