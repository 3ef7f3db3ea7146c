"""Short names for C++ functions, as pprof, perf and heaptrack show them:
no return type, no parameter list, template arguments elided
(`std::map<>::operator[]`); and the names a report shows, each as short as
it can be without two functions reading the same.  A demangled name is read with its brackets
balanced; the tokens `operator<`, `operator<<`, `operator->` and their
kind are not brackets."""

from __future__ import annotations

from collections import Counter

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
        end += 1
    return end


def _operator_at(name: str, position: int) -> bool:
    """Whether the word operator ends at position, as an identifier."""
    start = position - len("operator")
    return start >= 0 and name[start:position] == "operator" and (start == 0 or not (
        name[start - 1].isalnum() or name[start - 1] == "_"))


def _scan(name: str) -> list[tuple[int, int, str]]:
    """The name's top-level pieces: (start, end, kind), kind "text" or the
    bracket that opens a group (the group spans start..end inclusive of its
    brackets).  Unbalanced input gives one text piece."""
    pieces: list[tuple[int, int, str]] = []
    depth: list[str] = []
    start = 0
    group_start = 0
    n = 0
    while n < len(name):
        if not depth and _operator_at(name, n) and not (name[n].isalnum() or name[n] == "_"):
            end = _operator_name_end(name, n)
            if end > n:
                n = end
                continue
        c = name[n]
        if c in _OPEN:
            if not depth:
                if n > start:
                    pieces.append((start, n, "text"))
                group_start = n
            depth.append(c)
        elif c in _CLOSE:
            if not depth or depth[-1] != _CLOSE[c]:
                return [(0, len(name), "text")]
            depth.pop()
            if not depth:
                pieces.append((group_start, n + 1, name[group_start]))
                start = n + 1
        n += 1
    if depth:
        return [(0, len(name), "text")]
    if start < len(name):
        pieces.append((start, len(name), "text"))
    return pieces


def short_name(name: str, templates: bool = False) -> str:
    """The name without return type, parameters and (unless templates)
    template arguments; a name that is not a demangled C++ function (C,
    module+0xoffset) comes back as it was."""
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
    if len(pieces) > 1 and pieces[-1][2] == "(" and body[pieces[-1][0]:pieces[-1][1]] != _ANONYMOUS:
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


def readable_names(signatures: dict[int, str]) -> dict[int, str]:
    """Each function's shortest name that no other function's shares: short,
    then with its template arguments, then its whole signature."""
    names: dict[int, str] = {}
    pending = dict(signatures)
    for shorten in (short_name, lambda name: short_name(name, templates=True)):
        candidates = {key: shorten(signature) for key, signature in pending.items()}
        taken = Counter(candidates.values())
        taken.update(names.values())
        for key, candidate in candidates.items():
            if taken[candidate] == 1:
                names[key] = candidate
                del pending[key]
    names.update(pending)
    return names
