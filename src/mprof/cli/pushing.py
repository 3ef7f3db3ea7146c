"""--push for mprof run and mprof attach: the options, checked before the
program starts, and the process that pushes while the program runs
(push/periodic.py), forked after it starts and ended after it ends."""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from collections.abc import Callable, Sequence

from ..reducer.errors import MprofError
from .arguments import seconds

# Not typing's (see run.py): mprof run imports this module at every start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..push.periodic import Image, Settings

DEFAULT_EVERY_S = 15.0
# A label's name as the servers take it (Prometheus's, and a dot, which
# Pyroscope turns into an underscore); those that start with two
# underscores are the server's own.
_LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
# Pyroscope's limit is 30 labels a series, mprof's own six (and the
# metric's name) among them.
MOST_LABELS = 23
_LONGEST_VALUE = 2048


def label(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE with a label name of letters, digits, _ "
                                         "and . (not starting with a digit or __)")
    if not value or len(value) > _LONGEST_VALUE:
        raise argparse.ArgumentTypeError(f"{text!r}: a label's value is 1 to {_LONGEST_VALUE} characters")
    if not value.isprintable():
        import unicodedata

        # Control characters would reach every terminal and page that
        # shows the label; bytes that are not UTF-8 (kept by
        # surrogateescape) are no text a server takes.
        if any(unicodedata.category(c) == "Cc" or 0xD800 <= ord(c) <= 0xDFFF for c in value):
            raise argparse.ArgumentTypeError(f"{text!r}: a label's value is UTF-8 text without control characters")
    return name, value


def add_push_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--push", metavar="URL",
                        help=f"while {what} runs, push its memory profile to the Pyroscope server at URL every "
                             "interval (http[s]://[USER:PASSWORD@]HOST:PORT): what each process allocated in the "
                             "interval and what is live at its end")
    parser.add_argument("--every", type=seconds(0.1, 86400), default=DEFAULT_EVERY_S, metavar="SECONDS",
                        help="the interval of --push (default: %(default)g)")
    add_label_argument(parser)


def add_label_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--label", type=label, action="append", default=[], metavar="KEY=VALUE",
                        help="a label of every profile pushed, beside mprof's own (service_name, program, pid, "
                             "and a running program's hostname), which it may replace: service_name=NAME names the "
                             "service; repeatable")


def checked_labels(labels: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    names = [name for name, _ in labels]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise MprofError(f"--label {repeated[0]} is given twice", 2)
    if len(labels) > MOST_LABELS:
        raise MprofError(f"--label: at most {MOST_LABELS} labels (the server takes 30 a series, mprof's among them)",
                         2)
    return tuple(labels)


def refuse_labels_without_push(args: argparse.Namespace) -> None:
    if args.push is None and args.label:
        raise MprofError("--label labels what --push sends: give --push URL too", 2)


def settings(args: argparse.Namespace) -> Settings | None:
    """The pushes the command line asks for, checked; None without --push."""
    refuse_labels_without_push(args)
    if args.push is None:
        return None
    from ..push.periodic import Settings
    from ..push.target import target

    try:
        to = target(args.push)
    except MprofError as error:
        raise MprofError(error.message, 2) from None
    return Settings(to, args.every, checked_labels(args.label))


def start(push: Settings, images: Callable[[], Sequence[Image]], mask: set[int]) -> tuple[int, int]:
    """Forks the pusher, with the signal mask mask; its pid, and the
    descriptor whose closing tells it the program has ended."""
    ended_read, ended_write = os.pipe()
    pusher = os.fork()
    if pusher:
        os.close(ended_read)
        return pusher, ended_write
    status = 1
    try:
        os.close(ended_write)
        # The terminal's Ctrl-C, Ctrl-\ and hang-up are for the program: the
        # pusher goes on to push what the program left as it ended.
        for number in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the command's handler, if it has one
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        from ..push.periodic import Pusher

        Pusher(push, images).run(ended_read)
        status = 0
    except MprofError as error:
        print(f"mprof: push: {error}", file=sys.stderr)
    except Exception as error:  # a bug: said in one line, then the pusher's end, never the run's
        from ..reducer.escape import printable

        print(f"mprof: push: stopped by a fault of mprof's: {type(error).__name__}: {printable(str(error))}",
              file=sys.stderr)
    finally:
        os._exit(status)


def finish(pusher: int, ended: int) -> None:
    """Tells the pusher the program has ended and waits while it pushes
    what is left (for a bounded time: Settings.push_timeout_s)."""
    os.close(ended)
    os.waitpid(pusher, 0)
