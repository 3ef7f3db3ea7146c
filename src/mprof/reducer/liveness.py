"""Whether the process image a checkpoint came from still runs on this
machine: a checkpoint is rewritten while its process runs, so it says
"the process never wrote its final file" only of one that ended."""

from __future__ import annotations

import os

# /proc/stat's boot time has whole seconds and a process's start time
# clock ticks: the monitor's own start is within this of the kernel's.
_START_SLACK_NS = 2_000_000_000


def _process_start_unix_ns(pid: int) -> int | None:
    """When the process with pid started, by the kernel's clock; None
    when it does not exist or /proc cannot say."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as machine:
            boot = next(int(line.split()[1]) for line in machine if line.startswith(b"btime "))
    except (OSError, IndexError, ValueError, StopIteration):
        return None
    # Field 22 of stat, the start time; the fields after the command's ")"
    # begin at field 3.
    ticks = int(fields[22 - 3])
    return boot * 1_000_000_000 + ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def still_running(pid: int, start_unix_ns: int, executable: str) -> bool:
    """Whether pid is still the process that started at start_unix_ns
    running executable: it exists, did not start after it (a pid used
    again) and, where its executable can be read, runs the same file."""
    started = _process_start_unix_ns(pid)
    if started is None or started > start_unix_ns + _START_SLACK_NS:
        return False
    try:
        running = os.readlink(f"/proc/{pid}/exe")
    except PermissionError:
        return True  # another user's process: its start time is all there is
    except OSError:
        return False  # a zombie, or a kernel thread
    return not executable or os.path.realpath(executable) == running
