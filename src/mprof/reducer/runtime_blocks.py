"""Blocks the C and C++ runtimes allocate and keep until the process ends on
purpose: stdio's buffers, the dynamic loader's (a thread's dtv and TLS
blocks, link maps), libstdc++'s emergency exception pool, setlocale's
tables, the name service's and the time zone's state.  valgrind frees most
of them at exit (__libc_freeres, __gnu_cxx::__freeres) and heaptrack
suppresses them; mprof recognises them with the rules below and the reports
show them apart from the program's leaks.

A rule looks at a leak record's frames, innermost first, as (function,
module path).  The rules hold where the runtime has only its exported
symbols (Debian without libc6-dbg) and where the leak depth cuts the path
short: each needs only the innermost few frames."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

LOADER = re.compile(r"(ld-linux[\w.-]*|ld64|ld)\.so(\.[\d.]+)?")
LIBC = re.compile(r"libc\.so(\.[\d.]+)?")
STDCXX = re.compile(r"libstdc\+\+\.so(\.[\d.]+)?")

Frames = Sequence[tuple[str, str]]  # (function, module path), innermost first


def _in(pattern: re.Pattern[str], frame: tuple[str, str]) -> bool:
    return pattern.fullmatch(os.path.basename(frame[1])) is not None


def _named(frame: tuple[str, str], *names: str) -> bool:
    """The function is one of names, C or C++ (with any parameter list)."""
    function = frame[0]
    return any(function == name or function.startswith(name + "(") for name in names)


def _stdio(frames: Frames) -> bool:
    # The buffer of a stream, allocated on its first read or write; C++'s
    # streams keep their own once sync_with_stdio(false) is called.
    return _named(frames[0], "_IO_file_doallocate") or any(
        _named(frame, "std::ios_base::sync_with_stdio") for frame in frames)


def _loader(frames: Frames) -> bool:
    # The loader allocates for itself only: link maps, scope lists, a
    # thread's dtv and the TLS blocks of dlopen'ed libraries.
    return _in(LOADER, frames[0])


def _exception_pool(frames: Frames) -> bool:
    # libstdc++'s pool comes from its own static initialiser, which the
    # loader runs: a path from the loader straight into libstdc++.
    outside = next((frame for frame in frames if not _in(STDCXX, frame)), None)
    return (_in(STDCXX, frames[0]) and outside is not None and _in(LOADER, outside)) or any(
        _named(frame, "(anonymous namespace)::pool::pool") for frame in frames)


def _libc_under(*names: str) -> Callable[[Frames], bool]:
    def rule(frames: Frames) -> bool:
        return _in(LIBC, frames[0]) and any(_named(frame, *names) for frame in frames)
    return rule


# (what keeps the blocks, its rule): the first that matches names them.
RULES: tuple[tuple[str, Callable[[Frames], bool]], ...] = (
    ("stdio buffer", _stdio),
    ("dynamic loader", _loader),
    ("C++ exception pool", _exception_pool),
    # C++'s locales build their C locales once, through newlocale.
    ("locale tables", _libc_under("setlocale", "std::locale::facet::_S_create_c_locale")),
    ("name service", _libc_under("getpwnam", "getpwuid", "getgrnam", "getgrgid", "__nss_database_get",
                                 "__nss_passwd_lookup2", "__nss_group_lookup2", "__nss_module_allocate")),
    ("time zone", _libc_under("tzset", "tzset_internal", "__tzfile_read")),
    ("strerror buffer", _libc_under("strerror", "strerror_l", "__strerror_l", "strsignal")),
)


def kept_by(frames: Frames) -> str:
    """What keeps a leak record's blocks on purpose, or "" when the program
    does (no rule matches)."""
    if not frames:
        return ""
    return next((name for name, rule in RULES if rule(frames)), "")
