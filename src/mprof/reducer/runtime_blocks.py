"""Blocks the C and C++ runtimes allocate and keep until the process ends on
purpose: stdio's buffers, the dynamic loader's (a thread's dtv and TLS
blocks, link maps), libstdc++'s emergency exception pool, setlocale's
tables, the name service's and the time zone's state.  valgrind frees most
of them at exit (__libc_freeres, __gnu_cxx::__freeres) and heaptrack
suppresses them; mprof recognises them with the rules below and the reports
show them apart from the program's leaks.

A rule looks at a path's frames, innermost first, as (function, module
path), through their Chain.  The rules hold where the runtime has only its
exported symbols (Debian without libc6-dbg) and where the leak depth cuts
the path short: each needs only the innermost few frames."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from typing import NamedTuple

LOADER = re.compile(r"(ld-linux[\w.-]*|ld64|ld)\.so(\.[\d.]+)?")
LIBC = re.compile(r"libc\.so(\.[\d.]+)?")
STDCXX = re.compile(r"libstdc\+\+\.so(\.[\d.]+)?")

Frame = tuple[str, str]  # (function, module path)
Frames = Sequence[Frame]  # innermost first

# The functions a rule looks for anywhere on a path, a bit per group.
_SYNC_WITH_STDIO = 1
_EXCEPTION_POOL = 2
_LOCALE = 4
_NAME_SERVICE = 8
_TIME_ZONE = 16
_STRERROR = 32
_GROUPS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (_SYNC_WITH_STDIO, ("std::ios_base::sync_with_stdio",)),
    (_EXCEPTION_POOL, ("(anonymous namespace)::pool::pool",)),
    # C++'s locales build their C locales once, through newlocale.
    (_LOCALE, ("setlocale", "std::locale::facet::_S_create_c_locale")),
    (_NAME_SERVICE, ("getpwnam", "getpwuid", "getgrnam", "getgrgid", "__nss_database_get", "__nss_passwd_lookup2",
                     "__nss_group_lookup2", "__nss_module_allocate")),
    (_TIME_ZONE, ("tzset", "tzset_internal", "__tzfile_read")),
    (_STRERROR, ("strerror", "strerror_l", "__strerror_l", "strsignal")),
)
# Blocks libc allocates under a function of a group: (what keeps them, group).
_LIBC_UNDER = (("locale tables", _LOCALE), ("name service", _NAME_SERVICE), ("time zone", _TIME_ZONE),
               ("strerror buffer", _STRERROR))


@functools.cache
def _module_is(pattern: re.Pattern[str], module: str) -> bool:
    return pattern.fullmatch(os.path.basename(module)) is not None


def _named(function: str, *names: str) -> bool:
    """The function is one of names, C or C++ (with any parameter list)."""
    return any(function == name or function.startswith(name + "(") for name in names)


_GROUP_OF_NAME = {name: bit for bit, names in _GROUPS for name in names}


@functools.cache
def groups_of(function: str) -> int:
    """The groups a function is named in, as Chain.groups holds them: its
    whole name, or what comes before one of its parentheses (_named), is a
    name of the group."""
    groups = _GROUP_OF_NAME.get(function, 0)
    at = function.find("(")
    while at >= 0:
        groups |= _GROUP_OF_NAME.get(function[:at], 0)
        at = function.find("(", at + 1)
    return groups


def in_stdcxx(module: str) -> bool:
    return _module_is(STDCXX, module)


class Chain(NamedTuple):
    """What the rules need of a path's frames: its innermost frame, the
    groups named anywhere on it, and its innermost frame outside
    libstdc++.  A path's chain is its caller's extended by one frame, so a
    tree of paths costs one step per node, whatever its depth (a named
    tuple: a big program's leaks make tens of thousands)."""
    innermost: Frame
    groups: int
    outside_stdcxx: Frame | None


def called(frame: Frame, caller: Chain | None) -> Chain:
    """The chain of frame called from the innermost frame of caller (None:
    frame is outermost)."""
    outside = frame if not in_stdcxx(frame[1]) else caller.outside_stdcxx if caller else None
    return Chain(frame, (caller.groups if caller else 0) | groups_of(frame[0]), outside)


def chain_of(frames: Frames) -> Chain | None:
    """The chain of frames, innermost first; None for no frames."""
    chain = None
    for frame in reversed(frames):
        chain = called(frame, chain)
    return chain


def kept_by(chain: Chain | None) -> str:
    """What keeps a path's blocks on purpose, or "" when the program does
    (no rule matches): the first of the rules below that does."""
    if chain is None:
        return ""
    function, module = chain.innermost
    # The buffer of a stream, allocated on its first read or write; C++'s
    # streams keep their own once sync_with_stdio(false) is called.
    if _named(function, "_IO_file_doallocate") or chain.groups & _SYNC_WITH_STDIO:
        return "stdio buffer"
    # The loader allocates for itself only: link maps, scope lists, a
    # thread's dtv and the TLS blocks of dlopen'ed libraries.
    if _module_is(LOADER, module):
        return "dynamic loader"
    # libstdc++'s pool comes from its own static initialiser, which the
    # loader runs: a path from the loader straight into libstdc++.
    outside = chain.outside_stdcxx
    if (_module_is(STDCXX, module) and outside is not None and _module_is(LOADER, outside[1])) or \
            chain.groups & _EXCEPTION_POOL:
        return "C++ exception pool"
    if _module_is(LIBC, module):
        return next((name for name, group in _LIBC_UNDER if chain.groups & group), "")
    return ""
