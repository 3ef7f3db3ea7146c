"""Names from the program's world (paths, arguments, symbols) shown safely
on a terminal: control characters and bytes that are not UTF-8 become \\xNN,
and a backslash becomes \\\\, so no name can move the cursor, retitle the
window or end a line, and none reads like another."""

from __future__ import annotations


def printable(text: str) -> str:
    if text.isprintable() and "\\" not in text:
        return text
    # Only here: mprof run, whose names are nearly always printable, starts
    # faster without it.
    import unicodedata

    shown = []
    for character in text:
        code = ord(character)
        if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, kept by surrogateescape
            shown.append(f"\\x{code - 0xDC00:02x}")
        elif character == "\\":
            shown.append("\\\\")
        elif unicodedata.category(character) == "Cc":
            shown.append(f"\\x{code:02x}")
        else:
            shown.append(character)
    return "".join(shown)
