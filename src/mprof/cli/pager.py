"""Long output on a terminal goes through a pager, the way git does it:
$MPROF_PAGER, then $PAGER, then less; empty or "cat" means none.  Output
that is piped or redirected is never paged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys


def pager_command() -> str | None:
    command = os.environ.get("MPROF_PAGER")
    if command is None:
        command = os.environ.get("PAGER")
    if command is None:
        command = "less"
    return None if command.strip() in ("", "cat") else command


def show(text: str, paging: bool) -> None:
    """Writes text to stdout, through the pager when paging is allowed and
    stdout is a terminal."""
    command = pager_command() if paging and sys.stdout.isatty() else None
    if command is None:
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    # As git: less quits when the text fits one screen (F), passes colours
    # (R) and leaves the text on the screen (X), unless the user set LESS.
    environment = {**os.environ, "LESS": os.environ.get("LESS", "FRX"), "LV": os.environ.get("LV", "-c")}
    pager = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=environment)
    # The pager owns the terminal now: ^C is for it (less uses it to stop a
    # search), and mprof waits until it ends.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert pager.stdin is not None
        try:
            pager.stdin.write(text.encode(sys.stdout.encoding or "utf-8", "surrogateescape"))
            pager.stdin.close()
        except BrokenPipeError:
            pass  # the reader quit before the end
        code = pager.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    if code == 127:
        # The shell could not find the pager (and said so): the text still
        # reaches the terminal.
        sys.stdout.write(text)
