"""How the live view writes its figures where columns are few: a count in
six characters, a time since the process started."""

from __future__ import annotations


def compact(value: float, binary: bool = False, sign: bool = False) -> str:
    """value in at most 6 characters: 4,902 as it is, 14,015 as 14.0k (or,
    binary, 13.7K for 1024s), then M and G."""
    step, units = (1024, "KMG") if binary else (1000, "kMG")
    prefix = ("+" if value > 0 else "-" if value < 0 else "") if sign else ("-" if value < 0 else "")
    magnitude = abs(value)
    if magnitude < 10_000:
        return f"{prefix}{magnitude:,.0f}"
    for unit in units:
        magnitude /= step
        if magnitude < 999.5 or unit == "G":
            return f"{prefix}{magnitude:.1f}{unit}" if magnitude < 99.95 else f"{prefix}{magnitude:.0f}{unit}"
    raise AssertionError


def duration(ns: int) -> str:
    seconds = ns // 1_000_000_000
    return f"{seconds // 3600}:{seconds // 60 % 60:02}:{seconds % 60:02}"
