"""The options several commands share.  Apart from the reading of the
profile (inputs.py) so that a command's parser, built at every start,
imports nothing of the reducer."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

from .. import leak_kinds


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pid", type=int, action="append", default=[], metavar="PID",
                        help="only the process PID: the image it was forked as and the programs it executed, "
                             "not its children; repeatable")
    parser.add_argument("--program", action="append", default=[], metavar="NAME",
                        help="only the processes running NAME (an executable's name or path); repeatable")


def seconds(least: float, most: float, least_included: bool = True) -> Callable[[str], float]:
    """An argument type: a number of seconds from least (or above it) to
    most."""
    said = f"from {least:g} to {most:g}" if least_included else f"above {least:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not ((least <= value if least_included else least < value) and value <= most):
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds {said}")
        return value

    return parse


# LeakSanitizer's exit status for leaks found, so that a CI job reads a
# leak the same way under either tool.
LEAK_EXIT_STATUS = 23


def _bytes_limit(text: str) -> int:
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of bytes: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("at least 0")
    return value


def bare_optional_values(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """words, a command's arguments, with each option of an optional value (--fail-on-leak [BYTES]) given bare
    before a word that cannot be its value written OPTION=CONST: argparse would take that word (a data file, the
    program) for the value and stop on it.  Words after the program of a command that runs one are its own."""
    options = parser._option_string_actions
    runs_program = any(action.nargs == argparse.REMAINDER for action in parser._actions)
    rewritten: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        rewritten.append(word)
        if word == "--":
            break
        action = options.get(word)
        if action is None:
            if runs_program and not word.startswith("-"):
                break
            continue
        if action.nargs == "?" and index < len(words) and not _accepts(action, words[index]):
            rewritten[-1] = f"{word}={action.const}"
        elif action.nargs is None and index < len(words):
            rewritten.append(words[index])
            index += 1
    return rewritten + words[index:]


def _accepts(action: argparse.Action, word: str) -> bool:
    if word.startswith("-"):
        return False
    try:
        if callable(action.type):
            action.type(word)
    except (argparse.ArgumentTypeError, ValueError, TypeError):
        return False
    return True


def _kinds(text: str) -> frozenset[str]:
    try:
        return leak_kinds.parse_option(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


_KINDS_SYNTAX = "a comma list of definite, indirect, possible, reachable; or all, or none"


def add_leak_arguments(parser: argparse.ArgumentParser, fail: bool, measures: bool = False) -> None:
    """--suppressions and --leak-kinds, and with fail --fail-on-leak and
    --fail-on-leak-kinds; with measures, --leak-kinds chooses what the leak
    measures count (mprof export and diff have no leak table)."""
    what = ("the leak measures (leak_objects, leak_space) count" if measures else "the leak table lists")
    parser.add_argument("--leak-kinds", type=_kinds, default=leak_kinds.LOST, metavar="KINDS",
                        help=f"the leak kinds {what}, as memcheck's --show-leak-kinds: {_KINDS_SYNTAX} "
                             "(default definite,indirect)" + ("" if measures else "; the others are counted under it"))
    parser.add_argument("--suppressions", type=Path, action="append", default=[], metavar="FILE",
                        help="leave out of the leak report the never-freed blocks of paths a LeakSanitizer "
                             "suppression (leak:PATTERN) in FILE matches; repeatable")
    if fail:
        parser.add_argument("--fail-on-leak", type=_bytes_limit, nargs="?", const=0, default=None,
                            metavar="BYTES",
                            help=f"exit with status {LEAK_EXIT_STATUS} when the bytes lost (definitely or "
                                 "indirectly, as LeakSanitizer counts them; --fail-on-leak-kinds chooses) and not "
                                 "suppressed exceed BYTES (default 0); in runs not classified, the bytes never freed "
                                 "(the runtimes' own blocks aside)")
        parser.add_argument("--fail-on-leak-kinds", type=_kinds, default=leak_kinds.LOST, metavar="KINDS",
                            help="the leak kinds --fail-on-leak counts, as memcheck's --errors-for-leak-kinds: "
                                 f"{_KINDS_SYNTAX} (default definite,indirect)")


def add_naming_arguments(parser: argparse.ArgumentParser, short_names: str) -> None:
    """The options of what a report names, shared by its text and its page;
    short_names says what the view does without --full-names."""
    parser.add_argument("--include-runtime", action="store_true",
                        help="list among the leaks the blocks the C and C++ runtimes keep on purpose until exit "
                             "(stdio buffers, the C++ exception pool, the dynamic loader's)")
    parser.add_argument("--full-names", action="store_true",
                        help="name C++ functions with their parameters and template arguments (by default "
                             f"{short_names})")
