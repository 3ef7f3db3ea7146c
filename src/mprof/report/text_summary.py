"""`mprof dump`'s text: a data file's header and whole-program figures, as
they are in the file (the tables come from `mprof report`)."""

from __future__ import annotations

import shlex

from ..reducer.datafile import DataFile
from ..reducer.escape import printable
from .summary import signal_name


def datafile_to_text(df: DataFile) -> str:
    h = df.header
    s = df.summary
    command = shlex.join(df.program.argv) if df.program.argv else df.program.exe
    kind = "final" if h.final else "checkpoint" if h.checkpoint else "snapshot"
    if h.end_signal:
        kind += f", ended by {signal_name(h.end_signal)}"
    if h.forked:
        kind += ", fork child"
    lines = [
        f"program:   {printable(df.program.exe)}",
        f"command:   {printable(command)}",
        f"pid:       {h.pid} (parent {h.ppid}, {kind})",
        f"allocs:    {s.allocs}",
        f"frees:     {s.frees}",
        f"bytes:     {s.bytes_allocated} allocated, {s.bytes_freed} freed",
        f"kept:      {s.allocs - s.frees} objects, {s.bytes_allocated - s.bytes_freed} bytes",
        f"max live:  {s.max_live_objects} objects, {s.max_live_bytes} bytes",
    ]
    return "\n".join(lines) + "\n"
