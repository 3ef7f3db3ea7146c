"""The one warning line a report gives when modules on its call paths have
neither symbols nor debug information, on profiles made by hand (the real
resolver's word on each module is in test_debuginfod.py):
which modules it names, and the fix it gives for each kind of module."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from hand_profiles import NamedFrames, recorded
from mprof.cli.main import main
from mprof.reducer import profile as profile_module
from mprof.reducer.symbolize import Frame, WarningSink

PROGRAM = "/bin/prog"
INSTALLED = "/usr/lib/x86_64-linux-gnu/libsearch.so.2"
BUILT_HERE = "/home/dev/build/libcache.so"
# Address -> (module, name or "" when the module's symbols do not name it).
FRAMES = {0x10: (PROGRAM, "main"), 0x20: (INSTALLED, ""), 0x30: (BUILT_HERE, ""), 0x40: (BUILT_HERE, ""),
          0x50: (INSTALLED, "search_compile")}


class Stripped(NamedFrames):
    """Addresses resolved as the real resolver does when a module has no
    DWARF (nodebug): a name from its symbols, or none (module+offset); the
    modules whose symbols name no code at all are said (nosymbols)."""
    nosymbols: frozenset[str] = frozenset()

    def __init__(self, modules: object, warnings: WarningSink) -> None:
        super().__init__(modules, warnings)
        self.without_debug = {INSTALLED, BUILT_HERE}
        self.without_symbols = set(self.nosymbols)

    def resolve(self, addresses: Iterable[int], progress: object = None) -> dict[int, list[Frame]]:
        frames = {}
        for address in addresses:
            module, name = FRAMES[address]
            frames[address] = [Frame(name or f"{Path(module).name}+{address:#x}", "", 0, module, address, False)]
        return frames


def warnings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
             chains: list[tuple[int, ...]], nosymbols: set[str], **environment: str) -> list[str]:
    monkeypatch.setattr(profile_module, "Resolver", type("Said", (Stripped,), {"nosymbols": frozenset(nosymbols)}))
    monkeypatch.delenv("DEBUGINFOD_URLS", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    path = tmp_path / "stripped.mprof"
    path.write_bytes(recorded([(chain, 16, 1, 0) for chain in chains]).build())
    assert main(["report", "--no-pager", "--tables", "leaks", str(path)]) == 0
    return capsys.readouterr().err.splitlines()


def test_only_the_modules_without_symbols_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # libsearch has symbols (search_compile), only not for 0x20, and
    # libcache none: the one warning names libcache alone.
    assert warnings(tmp_path, monkeypatch, capsys, [(0x10, 0x20, 0x50), (0x10, 0x30, 0x40)], {BUILT_HERE}) == [
        "mprof: warning: no symbols or debug information for libcache.so (its frames read libcache.so+0x...); "
        "build with -g and do not strip, or set DEBUGINFOD_URLS to a debuginfod server that has them"]


def test_installed_and_own_modules_get_their_own_fixes_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert warnings(tmp_path, monkeypatch, capsys, [(0x10, 0x20), (0x10, 0x30)], {INSTALLED, BUILT_HERE}) == [
        "mprof: warning: no symbols or debug information for 2 modules: libcache.so, libsearch.so.2 (their frames "
        "read libcache.so+0x...); install the distribution's debug package (Debian's -dbgsym, Fedora's "
        "-debuginfo), or build with -g and do not strip, or set DEBUGINFOD_URLS to a debuginfod server that has "
        "them"]


def test_with_debuginfod_asked_the_line_says_so_and_the_named_modules_get_theirs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert warnings(tmp_path, monkeypatch, capsys, [(0x10, 0x20, 0x50), (0x10, 0x30)], {BUILT_HERE},
                    DEBUGINFOD_URLS="http://127.0.0.1:9") == [
        "mprof: warning: no symbols or debug information, on this machine or from debuginfod (http://127.0.0.1:9), "
        "for libcache.so (its frames read libcache.so+0x...); build with -g and do not strip",
        "mprof: warning: no debug information, on this machine or from debuginfod (http://127.0.0.1:9), for 1 "
        "module: libsearch.so.2; their functions have no file:line"]
