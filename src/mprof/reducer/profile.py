"""The reduction: one or more data files, symbolized, into one Profile."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from . import callgraph, frames_table, pathtree, pools
from .callgraph import CallGraph
from .errors import MprofError
from .records import DataFile
from .symbolize import Progress, Resolver, WarningSink, debuginfod_urls

# Summary figures that are maxima of one process, not sums over processes,
# and those of the moment of its peak.
_MAXIMA = ("max_live_objects", "max_live_bytes")
_OF_THE_PEAK = ("peak_ns", "peak_allocs")


@dataclass
class Run:
    path: str
    data: DataFile


@dataclass
class Bin:
    size: int
    allocs: int = 0
    frees: int = 0
    bytes: int = 0
    bytes_freed: int = 0
    temporaries: int = 0
    peak_blocks: int = 0
    peak_bytes: int = 0
    types: list[str] = field(default_factory=list)


@dataclass
class Profile:
    runs: list[Run] = field(default_factory=list)
    summary: dict[str, int] = field(default_factory=dict)
    bins: dict[int, Bin] = field(default_factory=dict)
    graph: CallGraph = field(default_factory=CallGraph)
    paths: pathtree.PathTree = field(default_factory=pathtree.PathTree)
    warnings: WarningSink = field(default_factory=WarningSink)


def latest_of_each_process(runs: Sequence[Run], warnings: WarningSink) -> list[Run]:
    """One file per process image (pid and start time): a snapshot or a
    checkpoint and the final file of one process count the same blocks, so
    only the latest is kept, in the order given."""
    latest: dict[tuple[int, int], Run] = {}
    for run in runs:
        key = (run.data.header.pid, run.data.header.start_unix_ns)
        if key not in latest or run.data.header.elapsed_ns > latest[key].data.header.elapsed_ns:
            latest[key] = run
    kept = [run for run in runs if latest[(run.data.header.pid, run.data.header.start_unix_ns)] is run]
    for run in runs:
        if not any(run is other for other in kept):
            later = latest[(run.data.header.pid, run.data.header.start_unix_ns)]
            warnings.warn(f"{run.path}: left out: {later.path} is a later file of the same process "
                          f"(pid {run.data.header.pid})")
    return kept


def reduce_files(files: Sequence[DataFile], *, progress: Progress | None = None,
                 paths_ready: Callable[[Profile], None] | None = None) -> Profile:
    """Symbolizes and merges the data files, read already, in the order
    given.  paths_ready is told as soon as the profile has every function
    and path, before the call graph's cycles and totals are worked out:
    a writer starts on the path tables there."""
    progress = progress or Progress(sys.stderr.isatty())
    profile = Profile()
    warnings = profile.warnings
    types: dict[int, set[str]] = {}
    without_debug: set[str] = set()
    without_symbols: set[str] = set()
    runs = [Run(data.path, data) for data in files]
    for run in latest_of_each_process(runs, warnings):
        path, data = run.path, run.data
        profile.runs.append(run)
        refused = [setting for setting in data.program.refused_settings if not _unrouted_allocator(path, setting,
                                                                                                    warnings)]
        if refused:
            warnings.warn(f"{path}: the monitor did not accept {', '.join(refused)} "
                          f"and kept its default{'s' if len(refused) > 1 else ''}")
        _add_summary(profile.summary, data)
        for b in data.bins:
            row = profile.bins.setdefault(b.size, Bin(b.size))
            row.allocs += b.allocs
            row.frees += b.frees
            row.bytes += b.bytes
            row.bytes_freed += b.bytes_freed
            row.temporaries += b.temporaries
            row.peak_blocks += b.peak_blocks
            row.peak_bytes += b.peak_bytes
        with Resolver(data.modules, warnings) as resolver:
            progress.start(f"resolving addresses of {data.program.exe or path} (pid {data.header.pid})")
            used = data.calls.used_addresses(len(data.addresses))
            frames = pools.resolve_all((data.addresses[index] for index in used), data.pools,
                                       lambda addresses: resolver.resolve(addresses, progress))
            progress.start(f"building the call graph of {path}")
            table = frames_table.frames_table(data, frames, profile.paths.names)
            try:
                callgraph.add_run(profile.graph, data, table, profile.paths.names)
                pathtree.add_run(profile.paths, profile.graph, data, table)
            except OverflowError:
                # An edge's or a path's figures, of absurd files: past 64 bits
                # nothing stores them (store.py says the same of the rest).
                names = ", ".join(str(run.path) for run in profile.runs)
                raise MprofError(f"{names}: figures add up past 64 bits, more than any run allocates") from None
            without_debug |= resolver.without_debug
            without_symbols |= resolver.without_symbols
            if data.program.exe:
                progress.start(f"reading the types of {data.program.exe}")
                for size, name in resolver.types(data.program.exe):
                    types.setdefault(size, set()).add(name)
    if paths_ready:
        paths_ready(profile)
    _warn_without_debug(profile, without_debug, without_symbols)
    progress.start("merging cycles")
    callgraph.finish(profile.graph)
    for size, row in profile.bins.items():
        row.types = sorted(types.get(size, ())) if size <= 1024 else []
    progress.finish()
    return profile


def _warn_without_debug(profile: Profile, without_debug: set[str], nameless: set[str]) -> None:
    """A line naming the modules on the profile's call chains (start-up
    code aside) that have neither symbols nor debug information, and the
    executables with frames of their own code unnamed, whose frames read
    module+offset, with what to do about it; and, when
    debuginfod was asked, one naming those it could not give debug
    information either, whose functions have names but no file:line."""
    on_chains = {module for _, module in profile.graph.functions}
    servers = debuginfod_urls()
    asked = f", on this machine or from debuginfod ({servers})," if servers else ""
    # An executable stripped but for a few exported symbols (.dynsym) is not
    # nameless to the resolver, yet its own frames read module+0x... too
    # (one it could not use at all, missing or changed, is warned of apart).
    programs = {run.data.program.exe for run in profile.runs} & without_debug
    unnamed = {module for name, module in profile.graph.functions
               if module in programs and name.startswith(f"{os.path.basename(module)}+0x")}
    unreadable = sorted((nameless & on_chains) | unnamed)  # the resolver says nosymbols only after nodebug
    if unreadable:
        names = [os.path.basename(path) or path for path in unreadable]
        which = (f"{names[0]} (its frames read {names[0]}+0x...)" if len(names) == 1 else
                 f"{_modules(len(names))}: {', '.join(names)} (their frames read {names[0]}+0x...)")
        profile.warnings.warn(f"no symbols or debug information{asked} for {which}; "
                              f"{_how_to_name(unreadable, bool(servers))}")
    if not servers:
        return
    missing = sorted(os.path.basename(path) or path for path in (without_debug & on_chains) - nameless)
    if missing:
        profile.warnings.warn(f"no debug information{asked} for {_modules(len(missing))}: {', '.join(missing)}; "
                              f"their functions have no file:line")


def _modules(count: int) -> str:
    return f"{count} module{'s' if count > 1 else ''}"


def _how_to_name(paths: list[str], asked_debuginfod: bool) -> str:
    """What gives names to the frames of these modules: the distribution's
    debug packages for its own files, a build with -g for the others, and a
    debuginfod server for either."""
    installed = [path for path in paths if path.startswith(("/usr/", "/lib", "/bin/", "/sbin/"))]
    advice = []
    if installed:
        advice.append("install the distribution's debug package" + ("s" if len(installed) > 1 else "")
                      + " (Debian's -dbgsym, Fedora's -debuginfo)")
    if len(installed) < len(paths):
        advice.append("build with -g and do not strip")
    if not asked_debuginfod:
        advice.append("set DEBUGINFOD_URLS to a debuginfod server that has them")
    return ", or ".join(advice)


# The monitor's word for an allocator MPROF_ALLOCATOR_PREFIX named that it
# could not route: PREFIX:executable or PREFIX:absent.
_UNROUTED = re.compile(r"MPROF_ALLOCATOR_PREFIX=(\w+):(executable|absent)")


def _unrouted_allocator(path: str, setting: str, warnings: WarningSink) -> bool:
    """Whether the refused setting is the allocator prefix's, said in its
    own words."""
    unrouted = _UNROUTED.fullmatch(setting)
    if not unrouted:
        return False
    prefix = unrouted[1]
    if unrouted[2] == "executable":
        warnings.warn(f"{path}: {prefix}malloc is linked into the executable itself, whose calls mprof cannot "
                      "route: the profile holds none of its blocks")
    else:
        warnings.warn(f"{path}: no library of the process defines {prefix}malloc and {prefix}free: the profile "
                      "holds none of their blocks")
    return True


def _add_summary(summary: dict[str, int], data: DataFile) -> None:
    # When the peak came: that of the process with the most live bytes.
    if data.summary.max_live_bytes >= summary.get("max_live_bytes", 0):
        summary["peak_ns"], summary["peak_allocs"] = data.summary.peak_ns, data.summary.peak_allocs
    for name, value in data.summary.items():
        if name in _MAXIMA:
            summary[name] = max(summary.get(name, 0), value)
        elif name not in _OF_THE_PEAK:
            summary[name] = summary.get(name, 0) + value
    summary["elapsed_ns"] = max(summary.get("elapsed_ns", 0), data.header.elapsed_ns)
