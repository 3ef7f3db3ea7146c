"""What the processes of an `mprof run` wrote, from the records the monitor
keeps in the run directory (monitor/runlog.c): one file per process image,
named PID-START, holding NUL-terminated (kind, value) pairs."""

from __future__ import annotations

import os
from pathlib import Path

# Plain classes, not dataclasses: importing dataclasses (and inspect with
# it) would add a third to the time mprof run takes to start a program.


class Image:
    """One program image of one process: a new image after exec, or a fork child."""

    def __init__(self, pid: int, start_ns: int) -> None:
        self.pid = pid
        self.start_ns = start_ns
        self.executable = ""
        self.files: list[tuple[str, str]] = []  # (final|checkpoint|snapshot, path)
        self.traces: list[str] = []  # written by mprof run --trace
        self.execed = False  # went on as a new image, having written nothing
        self.problems: list[str] = []  # what the monitor would have printed on the program's stderr

    @property
    def lost(self) -> bool:
        """Ended without a data file and without handing over to an exec'd image."""
        return not self.files and not self.execed


def read(directory: Path) -> list[Image]:
    images = []
    for entry in sorted(directory.iterdir()):
        pid, _, start = entry.name.partition("-")
        if not (pid.isdigit() and start.isdigit()):
            continue
        image = Image(int(pid), int(start))
        fields = entry.read_bytes().split(b"\0")
        for kind, value in zip(fields[0::2], fields[1::2], strict=False):
            text = os.fsdecode(value)
            if kind == b"start":
                image.executable = text
            elif kind == b"exec":
                image.execed = True
            elif kind == b"trace":
                image.traces.append(text)
            elif kind == b"problem":
                image.problems.append(text)
            else:
                image.files.append((kind.decode("ascii", "replace"), text))
        images.append(image)
    return sorted(images, key=lambda image: (image.start_ns, image.pid))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Written:
    """What mprof run says after the program: a line per file, and warnings."""

    def __init__(self) -> None:
        self.data_files: list[str] = []
        self.data_paths: list[str] = []  # the files of data_files' lines
        self.traces: list[str] = []
        self.warnings: list[str] = []


def report_lines(images: list[Image]) -> Written:
    """The files written, a line each, and warnings about processes that
    wrote no data file or met a problem; program paths escaped as the
    reports escape them."""
    from ..reducer.escape import printable

    written = Written()
    files, warnings = written.data_files, written.warnings
    seen: set[str] = set()
    for image in images:
        for _, path in image.files:
            # A process rewrites its file at each checkpoint and at the end:
            # the last record of a path says what it holds now.
            if path in seen:
                continue
            last = [k for k, p in image.files if p == path][-1]
            seen.add(path)
            ended = ", a checkpoint: it never wrote its final file"
            running = ", a checkpoint: it is still running, and rewrites it until it ends"
            note = {"final": "", "checkpoint": running if alive(image.pid) else ended,
                    "snapshot": ", a snapshot"}.get(last, f", {last}")
            program = printable(image.executable)
            files.append(f"{printable(path)} (pid {image.pid}, {program}{note})")
            written.data_paths.append(path)
        program = printable(image.executable)
        written.traces += [f"{printable(path)} (pid {image.pid}, {program})" for path in image.traces]
        warnings += [f"pid {image.pid} ({program}): {printable(problem)}" for problem in image.problems]
        if image.lost:
            if alive(image.pid):
                warnings.append(f"pid {image.pid} ({program}) is still running: its file will be "
                                f"written when it ends")
            else:
                warnings.append(f"pid {image.pid} ({program}) left no data file")
    return written
