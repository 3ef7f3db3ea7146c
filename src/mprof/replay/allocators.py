"""The allocators a trace can be replayed against: each name's library to
preload, found where Debian installs it, and the check that a replay ran
against the library it was given."""

from __future__ import annotations

import os
import platform
import sysconfig
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..reducer.errors import MprofError


@dataclass(frozen=True)
class Known:
    soname: str  # the library's file name, as the package installs it
    package: str  # Debian's


GLIBC = "glibc"
# glibc's malloc is the one in effect without a preload.
KNOWN: Mapping[str, Known | None] = {
    GLIBC: None,
    "jemalloc": Known("libjemalloc.so.2", "libjemalloc2"),
    "tcmalloc": Known("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
    "mimalloc": Known("libmimalloc.so.2", "libmimalloc2.0"),
}
DEFAULT = tuple(KNOWN)


@dataclass(frozen=True)
class Allocator:
    name: str
    library: Path | None  # None: glibc's own, nothing preloaded


def names(text: str) -> tuple[str, ...]:
    """A comma-separated list of known names, each once, in the order given."""
    chosen = tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    unknown = [name for name in chosen if name not in KNOWN]
    if unknown or not chosen:
        raise ValueError(f"choose from {', '.join(KNOWN)}")
    return chosen


def library_directories() -> list[Path]:
    """Where the dynamic loader's own libraries are: the multiarch directory
    first (Debian's), then the other usual ones."""
    triplets = [sysconfig.get_config_var("MULTIARCH") or "", f"{platform.machine()}-linux-gnu"]
    directories = [Path(root) / triplet for triplet in dict.fromkeys(triplets) if triplet
                   for root in ("/usr/lib", "/lib")]
    directories += [Path(name) for name in ("/usr/lib64", "/lib64", "/usr/lib", "/usr/local/lib")]
    return directories


def find(name: str, directories: Sequence[Path] | None = None) -> Allocator:
    known = KNOWN[name]
    if known is None:
        return Allocator(name, None)
    for directory in library_directories() if directories is None else directories:
        candidate = directory / known.soname
        if candidate.is_file():
            return Allocator(name, candidate)
    raise MprofError(f"{name}: {known.soname} not found: install Debian's {known.package} (make setup installs it)")


def environment(allocator: Allocator | None, base: Mapping[str, str]) -> dict[str, str]:
    """The replayer's environment: the allocator's library preloaded and
    nothing else, whatever mprof itself was started with (a profiler's
    library in LD_PRELOAD would measure itself)."""
    env = {key: value for key, value in base.items() if key != "LD_PRELOAD"}
    if allocator is not None and allocator.library is not None:
        env["LD_PRELOAD"] = str(allocator.library)
    return env


def _same_file(one: str, other: Path) -> bool:
    try:
        return os.path.samefile(one, other)
    except OSError:
        return os.path.basename(one) == other.name


def check_library(allocator: Allocator, reported: str | None, where: str) -> None:
    """The library mprof-replay says served its malloc must be the one
    asked for: a preload the loader refused would silently measure glibc."""
    if allocator.library is None:
        base = os.path.basename(reported or "")
        if not (base.startswith("libc.so") or base.startswith("libc-")):
            raise MprofError(f"{where}: the replay's malloc came from {reported or 'nowhere known'}, not glibc's "
                             f"libc.so (is another allocator in /etc/ld.so.preload?)")
    elif reported is None or not _same_file(reported, allocator.library):
        raise MprofError(f"{where}: the replay's malloc came from {reported or 'nowhere known'}, not "
                         f"{allocator.library}")
