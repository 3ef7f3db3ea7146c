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
    """What a path's folding is made of, read once a path: its length
    unfolded, whether each frame is own code, and whether it is longer
    than a fold of it alone ("[1 origin]")."""

    def __init__(self, frames: Sequence[Frame], partial: bool) -> None:
        self.own = [frame.own for frame in frames]
        self.lone = [len(frame.text) > 4 + len(frame.origin) for frame in frames]
        # Unfolded: the frames and "..." joined by " > ".
        parts = len(frames) + (1 if partial else 0)
        self.whole = (sum(len(frame.text) for frame in frames) + (len(PARTIAL) if partial else 0)
                      + len(SEPARATOR) * (parts - 1))


def _hidden(path: _Lengths, width: int, shown: set[int]) -> set[int]:
    """The frames a path of more than width characters folds: its library
    frames between the outermost and the innermost, but the first of each
    run that an own frame calls; of those, a lone frame only when it is
    longer than its fold.  Own frames, and frames in shown, stay."""
    if path.whole <= width:
        return set()
    last = len(path.own) - 1
    may_fold = [0 < n < last and n not in shown and not path.own[n] and not path.own[n - 1]
                for n in range(len(path.own))]
    return {n for n, fold in enumerate(may_fold)
            if fold and ((n > 0 and may_fold[n - 1]) or (n < last and may_fold[n + 1]) or path.lone[n])}


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
