"""Short names for C++ and Rust functions, as pprof, perf and heaptrack show
them: no return type, no parameter list, template and generic arguments
elided (`std::map<>::operator[]`, `alloc::vec::Vec<>::push`); and the names
a report shows, each as short as it can be without two functions reading the
same.  A demangled name is read with its brackets balanced; the tokens
`operator<`, `operator<<`, `operator->` and their kind are not brackets.

Rust names come from the resolver whole, as rustc-demangle prints them
without its alternate flag: a legacy name ends in its hash
(`mt::worker::h0123456789abcdef`), a v0 name carries each crate's
disambiguator (`alloc[f15a878b47eb696b]::alloc::realloc`).  Both are dropped
unless they are what tells two functions apart: in legacy mangling two
instances of one generic function differ by their hash alone."""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable

_OPEN = {"(": ")", "<": ">", "[": "]", "{": "}"}
_CLOSE = {close: open_ for open_, close in _OPEN.items()}
# After "operator", the characters of an operator's own name: no bracket
# among them opens anything (operator(), operator[] and operator<=> too).
_OPERATOR_CHARACTERS = set("()[]<>=!+-*/%^&|~,")
_QUALIFIERS = (" const", " volatile", " &&", " &", " noexcept")
_ANONYMOUS = "(anonymous namespace)"


def _operator_name_end(name: str, at: int) -> int:
    """The end of an operator's own name when one starts at at (just after
    the word operator), else at: `()` and `[]` as a whole, else a run of
    operator characters, leaving out `<` that opens template arguments
    after a space (`operator< <int>`)."""
    if name.startswith(("()", "[]"), at):
        return at + 2
    end = at
    while end < len(name) and name[end] in _OPERATOR_CHARACTERS and name[end] not in "()[]":
        # No operator's name has a < after another character but <
        # (operator<, operator<<=, operator<=>): that < opens the template
        # arguments (std::operator+<char>).
        if name[end] == "<" and end > at and name[at:end].strip("<"):
            break
        end += 1
    return end


# What _scan stops at: a bracket, or the word operator.
_SCAN_STOPS = re.compile(r"[][(){}<>]|(?<!\w)operator(?!\w)")


def _scan(name: str) -> list[tuple[int, int, str]]:
    """The name's top-level pieces: (start, end, kind), kind "text" or the
    bracket that opens a group (the group spans start..end inclusive of its
    brackets).  Unbalanced input gives one text piece."""
    pieces: list[tuple[int, int, str]] = []
    depth: list[str] = []
    start = 0
    group_start = 0
    stop = _SCAN_STOPS.search(name)
    while stop is not None:
        n = stop.start()
        c = name[n]
        if c == "o":
            # An operator's own name holds no bracket at the top level.
            after = stop.end()
            stop = _SCAN_STOPS.search(name, _operator_name_end(name, after) if not depth else after)
            continue
        if c in _OPEN:
            if not depth:
                if n > start:
                    pieces.append((start, n, "text"))
                group_start = n
            depth.append(c)
        else:
            if not depth or depth[-1] != _CLOSE[c]:
                return [(0, len(name), "text")]
            depth.pop()
            if not depth:
                pieces.append((group_start, n + 1, name[group_start]))
                start = n + 1
        stop = _SCAN_STOPS.search(name, n + 1)
    if depth:
        return [(0, len(name), "text")]
    if start < len(name):
        pieces.append((start, len(name), "text"))
    return pieces


_BRACKETS = re.compile(r"[][(){}<>]")
_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
# rust-lang's own rust-demangler strips them the same way: hex in brackets
# right after a crate's name, before the rest of the path.
_RUST_CRATE = re.compile(r"(?<=\w)\[[0-9a-f]{1,16}\](?=::)")


def is_rust(name: str) -> bool:
    """Whether a demangled name is a Rust path: it has a legacy hash or a
    crate disambiguator, or starts with a qualified path (`<T as Trait>::f`),
    as no C++ name does."""
    return name.startswith("<") or bool(_RUST_HASH.search(name) or _RUST_CRATE.search(name))


def rust_path(name: str) -> str:
    """A Rust name as rustc-demangle's alternate form prints it: without the
    legacy hash and the crate disambiguators."""
    return _RUST_CRATE.sub("", _RUST_HASH.sub("", name))


def _closing_angle(name: str, at: int) -> int:
    """Where the `<` at at closes, or -1; the `->` of a fn type closes nothing."""
    depth = 0
    for n in range(at, len(name)):
        if name[n] == "<":
            depth += 1
        elif name[n] == ">" and name[n - 1] != "-":
            depth -= 1
            if depth == 0:
                return n
    return -1


def _rust_short(name: str) -> str:
    """A Rust path with its generic arguments elided: those of a type or
    function (`Vec<T,A>`, `drop_in_place::<T>`) read `<>`.  A `<...>` that
    opens a path is no argument list but the type or impl the path starts
    from (`<Vec<u8> as Drop>::drop`, `impls::<impl FnOnce<A> for &F>`): it
    stays, shortened the same way, and `<T>` of a plain path T reads T, as
    the legacy mangling of the same function does."""
    out = []
    n = 0
    while n < len(name):
        if name[n] != "<":
            out.append(name[n])
            n += 1
            continue
        end = _closing_angle(name, n)
        if end < 0:
            return name
        previous = name[n - 1] if n else ""
        if previous.isalnum() or previous == "_" or (name.endswith("::", 0, n) and not name.startswith("impl ", n + 1)):
            out.append("<>")
        else:
            shortened = _rust_short(name[n + 1:end])
            plain = bool(re.fullmatch(r"\w[\w:<>]*", shortened)) and name.startswith("::", end + 1)
            out.append(shortened if plain else f"<{shortened}>")
        n = end + 1
    return "".join(out)


# Pure, and slow on a C++ signature (a twentieth of a second for cc1plus's
# 8,400 functions): the two sides of a diff, of one program, mostly share
# their functions.
@functools.lru_cache(maxsize=1 << 16)
def short_name(name: str, templates: bool = False) -> str:
    """The name without return type, parameters and (unless templates)
    template arguments; a Rust name without its hash and crate
    disambiguators, and (unless templates) its generic arguments; a name
    that is neither a demangled C++ function nor Rust's (C,
    module+0xoffset) comes back as it was."""
    if is_rust(name):
        return rust_path(name) if templates else _rust_short(rust_path(name))
    if not _BRACKETS.search(name):
        return name  # a C name, an address, a name without parameters: nothing to leave out
    clone = ""
    while name.endswith("]") and " [clone " in name:
        at = name.rindex(" [clone ")
        clone = name[at:] + clone
        name = name[:at]
    body = name
    changed = True
    while changed:
        changed = False
        for qualifier in _QUALIFIERS:
            if body.endswith(")" + qualifier):
                body = body[:-len(qualifier)]
                changed = True
    pieces = _scan(body)
    function = len(pieces) > 1 and pieces[-1][2] == "(" and body[pieces[-1][0]:pieces[-1][1]] != _ANONYMOUS
    if function:
        pieces.pop()  # the parameter list
    elif body is not name:
        body, pieces = name, _scan(name)  # qualifiers with no parameter list: not a function
    out = []
    for n, (start, end, kind) in enumerate(pieces):
        following = body[pieces[n + 1][0]:] if n + 1 < len(pieces) else ""
        if kind == "(" and following.startswith("::") and body[start:end] != _ANONYMOUS:
            continue  # the parameters of the function a local class or lambda is in
        out.append("<>" if kind == "<" and not templates else body[start:end])
    text = "".join(out)
    if not function:
        # No parameter list, so no return type either: a C symbol may hold
        # a space (an asm label such as "leaky_function free") and is
        # shown whole.
        return text + clone
    # The return type of a template function: up to the last space outside
    # brackets, unless that space belongs to the operator's name (operator
    # new, operator unsigned long).
    operator = text.rfind("operator")
    head = text[:operator] if operator >= 0 else text
    space = _last_top_level_space(head)
    if space >= 0:
        text = text[space + 1:]
    return text + clone


def _last_top_level_space(text: str) -> int:
    depth = 0
    last = -1
    for n, c in enumerate(text):
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == " " and depth == 0:
            last = n
    return last


def _nested_elided(text: str) -> str:
    """text with every bracketed group's own angle brackets emptied:
    `_Hash_node<std::pair<K, V>, true>` reads `_Hash_node<>`; unbalanced
    text as it is."""
    pieces = _scan(text)
    if len(pieces) == 1 and pieces[0][2] == "text":
        return text
    return "".join("<>" if kind == "<" else text[start:end] for start, end, kind in pieces)


def _outer_templates(name: str) -> str:
    """The short name with its template arguments, each without arguments
    of its own (`std::__new_allocator<std::__detail::_Hash_node<>*>::
    allocate`): what tells most instances apart in a line's width."""
    templated = short_name(name, templates=True)
    pieces = _scan(templated)
    # A Rust path's <...> may be the type it starts from, not arguments.
    if is_rust(name) or (len(pieces) == 1 and pieces[0][2] == "text"):
        return templated
    return "".join(f"<{_nested_elided(templated[start + 1:end - 1])}>" if kind == "<" else templated[start:end]
                   for start, end, kind in pieces)


def _with_parameters(name: str, short: str) -> str:
    """short, then the parameter list of the function name names, its types'
    template arguments emptied (`std::vector<>::vector(unsigned long,
    std::allocator<> const&)`): what tells overloads apart; short alone for
    a name with none (C, Rust)."""
    if is_rust(name) or not _BRACKETS.search(name):
        return short
    pieces = _scan(name)
    if len(pieces) < 2 or pieces[-1][2] != "(":
        return short
    start, end, _ = pieces[-1]
    return short + "(" + _nested_elided(name[start + 1:end - 1]) + ")"


def readable_names(signatures: dict[int, str]) -> dict[int, str]:
    """Each function's shortest name that no other function's shares:
    short, then with its parameter list, then with its template arguments
    (each without its own, then whole), with the parameters again, then its
    whole signature; template arguments inside the parameters emptied till
    then.  A Rust name never shows its hash or crate disambiguators, as
    rustc-demangle prints it (only --full-names does): two instances of one
    generic function in legacy mangling, which differ in nothing else, read
    the same."""
    names: dict[int, str] = {}
    pending = dict(signatures)
    levels: tuple[Callable[[str], str], ...] = (
        short_name, lambda name: _with_parameters(name, short_name(name)), _outer_templates,
        lambda name: _with_parameters(name, _outer_templates(name)), lambda name: short_name(name, templates=True))
    for shorten in levels:
        candidates = {key: shorten(signature) for key, signature in pending.items()}
        taken = Counter(candidates.values())
        taken.update(names.values())
        for key, candidate in candidates.items():
            if taken[candidate] == 1:
                names[key] = candidate
                del pending[key]
    names.update({key: rust_path(signature) if is_rust(signature) else signature
                  for key, signature in pending.items()})
    return names
