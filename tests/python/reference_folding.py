"""Folding a table's paths as mprof did it in Python before
libmprof-reduce's fold.c: today's fold_paths, kept verbatim for
test_folding.py to compare the library's folds with, row by row.  The
rules are folding.py's docstrings; nothing here is used by mprof itself."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from mprof.report.folding import NO_CHAIN, PARTIAL, SEPARATOR, Element, Fold, Frame, ShownPath, _fold_label


def _elements(frames: Sequence[Frame], hidden: set[int]) -> list[Element]:
    elements: list[Element] = []
    run: list[Frame] = []
    for index, frame in enumerate(frames):
        if index in hidden:
            run.append(frame)
            continue
        if run:
            elements.append(Fold(tuple(run)))
            run = []
        elements.append(frame)
    if run:
        elements.append(Fold(tuple(run)))
    return elements


class _Lengths:
    """What a path's folded length is made of, read once a path: each
    frame's text length, whether it is own code, its origin, and whether
    it is longer than a fold of it alone ("[1 frame]", "[1 origin]")."""

    def __init__(self, frames: Sequence[Frame], partial: bool) -> None:
        self.partial = partial
        self.lengths = [len(frame.text) for frame in frames]
        self.own = [frame.own for frame in frames]
        self.origins = [frame.origin for frame in frames]
        self.lone = [len(frame.text) > (9 if frame.own else 4 + len(frame.origin)) for frame in frames]
        # Unfolded: the frames and "..." joined by " > ".
        parts = len(frames) + (1 if partial else 0)
        self.whole = sum(self.lengths) + (len(PARTIAL) if partial else 0) + len(SEPARATOR) * (parts - 1)

    def folded(self, hidden: list[bool]) -> int:
        """len(render(_elements(frames, hidden frames), partial)), without
        making them: a fold's label is [N frames] or [N origins]
        (_fold_label)."""
        lengths, owns, origins_of = self.lengths, self.own, self.origins
        total, parts = (len(PARTIAL), 1) if self.partial else (0, 0)
        count = len(lengths)
        n = 0
        while n < count:
            if not hidden[n]:
                total += lengths[n]
                parts += 1
                n += 1
                continue
            start = n
            own = owns[n]
            first = origins_of[n]
            second = ""
            origins = 1
            n += 1
            while n < count and hidden[n]:
                if owns[n]:
                    own = True
                origin = origins_of[n]
                if origins == 1:
                    if origin != first:
                        second, origins = origin, 2
                elif origins == 2 and origin != first and origin != second:
                    origins = 3
                n += 1
            folded = n - start
            if own or origins > 2:
                total += 3 + len(str(folded)) + (len("frames") if folded > 1 else len("frame"))
            else:
                total += 3 + len(str(folded)) + len(first) + (2 + len(second) if origins == 2 else 0)
            parts += 1
        return total + len(SEPARATOR) * (parts - 1)


def _hidden(path: _Lengths, width: int, shown: set[int]) -> set[int]:
    """The frames a path of more than width characters folds: its library
    frames between the outermost and the innermost, then, while it is still
    too long, its own frames from the outer end, as few as will do, all but
    the innermost of them; of those, a lone frame only when it is longer
    than its fold.  Frames in shown stay."""
    count = len(path.lengths)
    last = count - 1
    # When a frame folds: its rank among the own frames that may fold, the
    # library's always (-1), the others never.
    never = count + 1
    rank = [never] * count
    own_frames = []
    for n in range(1, last):
        if n not in shown:
            if path.own[n]:
                own_frames.append(n)
            else:
                rank[n] = -1
    own_outer_first = own_frames[:-1]
    for place, n in enumerate(own_outer_first):
        rank[n] = place
    lone = path.lone

    def folding(folded_own: int) -> list[bool]:
        """The frames hidden when the first folded_own own frames fold too."""
        base = [place < folded_own for place in rank]
        return [hide and ((n > 0 and base[n - 1]) or (n < last and base[n + 1]) or lone[n])
                for n, hide in enumerate(base)]

    # Folding more frames makes a path shorter: the fewest that fit, found
    # by halving, or all of them.
    low, high = 0, len(own_outer_first)
    while low < high:
        middle = (low + high) // 2
        if path.folded(folding(middle)) <= width:
            high = middle
        else:
            low = middle + 1
    return {n for n, hide in enumerate(folding(low)) if hide}


def _differ(paths: Sequence[Sequence[Frame]], rows: list[int], at: int) -> bool:
    """Whether the rows' frames at at read differently."""
    first = paths[rows[0]][at].text
    return any(paths[n][at].text != first for n in rows)


def fold_paths(paths: Sequence[Sequence[Frame]], partial: Sequence[bool], width: int | None) -> list[ShownPath]:
    """Each path, outermost first, as a table shows it: whole when it fits
    in width characters (or width is None), else folded; where paths would
    then read the same, the innermost folded frame that tells them apart is
    shown, one at a time, until they differ."""
    shown: list[set[int]] = [set() for _ in paths]
    lengths = [_Lengths(path, partial[n]) for n, path in enumerate(paths)] if width is not None else []

    def hidden_of(n: int) -> set[int]:
        if width is None or lengths[n].whole <= width:
            return set()
        return _hidden(lengths[n], width, shown[n])

    def folded_of(n: int) -> ShownPath:
        return ShownPath(partial[n], tuple(_elements(paths[n], hidden[n])))

    def text_of(n: int) -> str:
        """folded_of(n).text, without making its elements."""
        frames, folds = paths[n], hidden[n]
        if not frames:
            return NO_CHAIN
        parts = [PARTIAL] if partial[n] else []
        run: list[Frame] = []
        for index, frame in enumerate(frames):
            if index in folds:
                run.append(frame)
                continue
            if run:
                parts.append(_fold_label(run))
                run = []
            parts.append(frame.text)
        if run:
            parts.append(_fold_label(run))
        return SEPARATOR.join(parts)

    hidden = [hidden_of(n) for n in range(len(paths))]
    texts = [text_of(n) for n in range(len(paths))]
    while True:
        readings: dict[str, list[int]] = defaultdict(list)
        for n, text in enumerate(texts):
            readings[text].append(n)
        opened = []
        for rows in readings.values():
            # Rows that read the same fold the same positions: their frames
            # line up.
            folded_positions = sorted(hidden[rows[0]], reverse=True) if len(rows) > 1 else []
            telling = next((at for at in folded_positions if _differ(paths, rows, at)), None)
            for at in [telling] if telling is not None else folded_positions[:1]:
                for n in rows:
                    shown[n].add(at)
                opened += rows
        if not opened:
            return [folded_of(n) for n in range(len(paths))]
        for n in opened:
            hidden[n] = hidden_of(n)
            texts[n] = text_of(n)
