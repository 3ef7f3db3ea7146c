"""Addresses to frames through the real mprof-resolve, in the test's own
process: the protocol's escapes, a program under a path full of bytes the
protocol must escape, module+offset for what cannot be named, and a
resolver that stops or stalls."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mprof import source_tree
from mprof.reducer.errors import MprofError
from mprof.reducer.records import Module
from mprof.reducer.symbolize import _BATCH as BATCH
from mprof.reducer.symbolize import Frame, Resolver, WarningSink, _unknown, escaped, resolver_path, unescaped

WIDGETS = source_tree.BUILD / "widgets"
# A directory name with a backslash, a tab, a newline, DEL, a byte that is
# not UTF-8 (0xff, held as a surrogate) and a character that is.
ODD = "odd\\dir\t\n\x7f\udcff é"


@pytest.fixture(autouse=True)
def resolver_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolver (real or stand-in) that misreads a request fails its test
    in seconds, not after the default minutes: widgets resolves in
    milliseconds, the stand-ins answer at once."""
    monkeypatch.setenv("MPROF_RESOLVE_TIMEOUT", "5")


def test_fields_are_escaped_for_the_protocol() -> None:
    assert escaped("plain text, é") == "plain text, é"
    assert escaped("a\\b\tc\x7f\x1f ~\udcff") == "a\\\\b\\x09c\\x7f\\x1f ~\udcff"
    assert escaped("\x00\n") == "\\x00\\x0a"


def test_fields_are_unescaped_from_the_protocol() -> None:
    assert unescaped("a\\\\b\\x09c\\x7F\\x1f") == "a\\b\tc\x7f\x1f"
    assert unescaped("\\xff") == "\udcff"  # a byte that is not UTF-8 comes back as it was
    assert unescaped("\\\\x41") == "\\x41"  # an escaped backslash, then text
    assert unescaped("\\q\\x4") == "\\q\\x4"  # not escapes: kept as they are
    assert unescaped(escaped(ODD)) == ODD


def test_what_cannot_be_named_is_module_and_offset() -> None:
    pathless = Module(0x1000, 0x1000, 0x2000, False, b"", "")
    library = Module(0x7000, 0x8000, 0x9000, False, b"", "/lib/libx.so")
    directory = Module(0xa000, 0xa000, 0xb000, False, b"", "/lib/")
    modules = [pathless, library, directory]
    assert _unknown(0x8000, modules) == Frame("libx.so+0x1000", "", 0, "/lib/libx.so", 0x1000, False)
    assert _unknown(0x8fff, modules) == Frame("libx.so+0x1fff", "", 0, "/lib/libx.so", 0x1fff, False)
    assert _unknown(0x9000, modules) == Frame("0x9000", "", 0, "", 0x9000, False)  # one past the end
    assert _unknown(0x1800, modules) == Frame("0x1800", "", 0, "", 0x1800, False)  # a module without a file
    assert _unknown(0xa010, modules) == Frame("/lib/+0x10", "", 0, "/lib/", 0x10, False)


def symbol_offset(path: Path, name: str) -> int:
    [line] = [line for line in subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
              .splitlines() if line.endswith(f" T {name}")]
    return int(line.split()[0], 16)


def addr2line(path: Path, offset: int) -> tuple[str, int]:
    located = subprocess.run(["addr2line", "-e", path, f"{offset:#x}"], capture_output=True, text=True, check=True)
    file, line = located.stdout.strip().rsplit(":", 1)
    return file, int(line)


def build_id(path: Path) -> bytes:
    notes = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    match = re.search(r"Build ID: ([0-9a-f]+)", notes)
    assert match
    return bytes.fromhex(match.group(1))


def test_a_program_under_an_odd_path(tmp_path: Path) -> None:
    directory = tmp_path / ODD
    directory.mkdir()
    program = directory / "widgets"
    shutil.copy(WIDGETS, program)
    bias = 0x5555_0000_0000
    module = Module(bias, bias, bias + program.stat().st_size, False, build_id(WIDGETS), str(program))
    warnings = WarningSink()
    with Resolver([module], warnings) as resolver:
        main = symbol_offset(WIDGETS, "main")
        frames = resolver.resolve([bias + main + 1, bias + 0x10])
        # A return address is looked up one byte back, inside its call:
        # there, main's first byte, whose line binutils' addr2line gives.
        # mprof names the file as compiled (relative to the build directory).
        [in_main] = frames[bias + main + 1]
        file, line = addr2line(WIDGETS, main)
        assert (in_main.function, in_main.file, in_main.line) == ("main", "examples/widgets.c", line)
        assert file.endswith("/examples/widgets.c")
        assert (in_main.module, in_main.offset, in_main.inlined) == (str(program), main + 1, False)
        # The ELF header is no function's.
        assert frames[bias + 0x10] == [Frame("widgets+0x10", "", 0, str(program), 0x10, False)]
        # widgets.c's widget: an enum and 50 ints.
        assert (204, "widget") in resolver.types(str(program))
        assert resolver.types("/not/a/module") == []
    assert warnings.messages == []


def test_a_build_id_that_does_not_match_is_a_warning(tmp_path: Path) -> None:
    bias = 0x5555_0000_0000
    module = Module(bias, bias, bias + 0x10000, False, bytes(range(20)), str(WIDGETS))
    warnings = WarningSink()
    with Resolver([module], warnings) as resolver:
        main = symbol_offset(WIDGETS, "main")
        assert resolver.resolve([bias + main])[bias + main] == [
            Frame(f"widgets+{main:#x}", "", 0, str(WIDGETS), main, False)]
    file_id = build_id(WIDGETS).hex()
    assert warnings.messages == [f"{WIDGETS}: build-id mismatch (file has {file_id}, the profile recorded "
                                 f"{bytes(range(20)).hex()})"]


def fake_resolver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    path = tmp_path / "fake-resolve"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    monkeypatch.setenv("MPROF_RESOLVE", str(path))


def test_a_resolver_that_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_resolver(tmp_path, monkeypatch, "read line; exit 0")
    with pytest.raises(MprofError) as raised:
        Resolver([Module(0, 0x1000, 0x2000, False, b"", "/lib/liba.so")], WarningSink())
    assert str(raised.value) == "mprof-resolve stopped unexpectedly declaring /lib/liba.so"


def test_a_resolver_that_stalls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_resolver(tmp_path, monkeypatch, "exec sleep 60")
    monkeypatch.setenv("MPROF_RESOLVE_TIMEOUT", "0.25")
    with pytest.raises(MprofError) as raised:
        Resolver([Module(0, 0x1000, 0x2000, False, b"", "/lib/liba.so")], WarningSink())
    assert str(raised.value) == "mprof-resolve gave no answer in 0.25 s declaring /lib/liba.so"


def test_a_resolver_that_answers_in_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Lines split across reads and several lines in one: each is read whole.
    # An empty line is skipped; a warning without its message still warns.
    fake_resolver(tmp_path, monkeypatch, "read line; printf 'warn'; sleep 0.1; "
                                         "printf 'ing\\tfirst\\\\x09one\\n\\nwarning\\tsecond\\nwarning\\ndone\\n'; "
                                         "read line")
    warnings = WarningSink()
    Resolver([Module(0, 0x1000, 0x2000, False, b"", "/lib/liba.so")], warnings).close()
    assert warnings.messages == ["first\tone", "second", "mprof-resolve: warning"]


@pytest.mark.parametrize(("ask", "doing"), [(lambda r: r.resolve([0x1010]), "while resolving addresses"),
                                            (lambda r: r.types("/lib/liba.so"), "reading the types of /lib/liba.so")])
def test_a_resolver_that_stalls_on_a_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             ask: Callable[[Resolver], object], doing: str) -> None:
    fake_resolver(tmp_path, monkeypatch, "read line; printf 'done\\n'; read line; exec sleep 60")
    monkeypatch.setenv("MPROF_RESOLVE_TIMEOUT", "0.25")
    resolver = Resolver([Module(0, 0x1000, 0x2000, False, b"", "/lib/liba.so")], WarningSink())
    with pytest.raises(MprofError) as raised:
        ask(resolver)
    assert str(raised.value) == f"mprof-resolve gave no answer in 0.25 s {doing}"
    resolver.close()


def test_the_protocol_with_a_resolver_that_plays_its_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in that logs each request and gives the answers of the
    # protocol (resolve/ in the tree): errors while declaring are warnings,
    # frames of two addresses, types, then an error while resolving.
    log = tmp_path / "requests"
    answers = ["error\\tno DWARF in liba\\nerror\\ndone\\n",
               "frames\\t1010\\nframe\\tf\\ta.c\\t12\\t/lib/liba.so\\t10\\t1\\n"
               "frame\\tg\\tb.c\\t20\\t/lib/liba.so\\t10\\t0\\nframes\\t1020\\ndone\\n",
               "type\\t204\\twidget\\ntype\\t16\\tstruct pair\\ndone\\n",
               "error\\tbad address\\ndone\\n",
               ""]
    fake_resolver(tmp_path, monkeypatch, "\n".join(f"IFS= read -r line || exit; printf '%s\\n' \"$line\" >> {log}; "
                                                   f"printf '{a}'" for a in answers))
    warnings = WarningSink()
    liba = Module(0, 0x1000, 0x2000, False, b"", "/lib/liba.so")
    with Resolver([liba], warnings) as resolver:
        assert warnings.messages == ["mprof-resolve: no DWARF in liba", "mprof-resolve: error"]
        assert resolver.resolve([0x1020, 0x1010, 0x1010]) == {
            0x1010: [Frame("f", "a.c", 12, "/lib/liba.so", 0x10, True),
                     Frame("g", "b.c", 20, "/lib/liba.so", 0x10, False)],
            0x1020: [Frame("liba.so+0x1020", "", 0, "/lib/liba.so", 0x1020, False)]}  # no frames: module+offset
        assert resolver.types("/lib/liba.so") == [(204, "widget"), (16, "struct pair")]
        with pytest.raises(MprofError) as raised:
            resolver.resolve([0x1030])
        assert str(raised.value) == "mprof-resolve: bad address"
    assert log.read_text().splitlines() == [
        "module\t0\t1000\t2000\t-\t/lib/liba.so", "resolve\t1010\t1020", "types\t/lib/liba.so", "resolve\t1030",
        "quit"]


def test_closing_a_resolver_that_misses_quit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    liba = Module(0, 0x1000, 0x2000, False, b"", "/lib/liba.so")
    # One that reads on past quit ends at the end of its input.
    fake_resolver(tmp_path, monkeypatch, "IFS= read -r line; printf 'done\\n'; while IFS= read -r line; do :; done")
    resolver = Resolver([liba], WarningSink())
    resolver.close()
    assert resolver._process.returncode == 0
    # One that never ends is killed once the timeout has passed.
    fake_resolver(tmp_path, monkeypatch, "IFS= read -r line; printf 'done\\n'; exec sleep 60")
    monkeypatch.setenv("MPROF_RESOLVE_TIMEOUT", "0.25")
    resolver = Resolver([liba], WarningSink())
    resolver.close()
    assert resolver._process.returncode == -9


def test_where_the_resolver_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    configured = tmp_path / "mprof-resolve"
    configured.write_text("#!/bin/sh\n")
    monkeypatch.setenv("MPROF_RESOLVE", str(configured))
    # Not executable: the source tree's own is taken instead.
    assert resolver_path() == source_tree.BUILD / "mprof-resolve"
    configured.chmod(0o755)
    assert resolver_path() == configured
    # Neither configured nor built: the one on PATH, else a one-line error.
    monkeypatch.delenv("MPROF_RESOLVE")
    monkeypatch.setattr(source_tree, "BUILD", tmp_path / "no-build")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert resolver_path() == configured
    configured.unlink()
    with pytest.raises(MprofError) as raised:
        resolver_path()
    assert str(raised.value) == "mprof-resolve not found (run make first)"


@pytest.mark.slow
def test_batches_sent_ahead_of_long_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in that answers each address with 40 frames, far more than a
    # pipe holds, and does not read the next request until its answer is
    # taken: the next batch, sent before the answer is read, must neither
    # block this side nor mix the answers up.
    log = tmp_path / "requests"
    stand_in = tmp_path / "stand_in.py"
    stand_in.write_text(f"""import sys
with open({str(log)!r}, "w") as log:
    for line in sys.stdin:
        log.write(line.split("\\t")[0].strip() + "\\n")
        if line.startswith("resolve"):
            for address in line.split()[1:]:
                print(f"frames\\t{{address}}\\t40")
                for depth in range(40):
                    print(f"frame\\tf{{address}}_{{depth}}\\t\\t0\\t/lib/liba.so\\t{{depth:x}}\\t{{int(depth < 39)}}")
        if line.startswith("quit"):
            break
        print("done", flush=True)
""")
    fake_resolver(tmp_path, monkeypatch, f"exec {sys.executable} {stand_in}")
    addresses = list(range(0x1000, 0x1000 + 2 * BATCH + 7))
    with Resolver([Module(0, 0x1000, 0x100000, False, b"", "/lib/liba.so")], WarningSink()) as resolver:
        frames = resolver.resolve(addresses)
    assert len(frames) == len(addresses)
    for address in addresses:
        assert [frame.function for frame in frames[address]] == [f"f{address:x}_{depth}" for depth in range(40)]
        assert [frame.inlined for frame in frames[address]] == [True] * 39 + [False]
    assert log.read_text().splitlines() == ["module", "resolve", "resolve", "resolve", "quit"]
