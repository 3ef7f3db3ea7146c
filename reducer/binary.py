"""Bounds-checked reading of one section's payload."""

from __future__ import annotations

import struct

from .errors import FormatProblem

_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


class Cursor:
    """Reads fields in order from a payload, naming what ran short.

    Every read checks the payload's end itself, so a wrong length field shows
    up as a message about that field rather than as a struct.error.
    """

    def __init__(self, payload: memoryview, section: str) -> None:
        self._payload = payload
        self._pos = 0
        self._section = section

    @property
    def remaining(self) -> int:
        return len(self._payload) - self._pos

    def take(self, size: int, what: str) -> memoryview:
        if size > self.remaining:
            raise FormatProblem(
                f"corrupt: section {self._section} payload ends inside {what}"
                f" ({size} bytes needed, {self.remaining} left)"
            )
        chunk = self._payload[self._pos : self._pos + size]
        self._pos += size
        return chunk

    def unpack(self, layout: struct.Struct, what: str) -> tuple[int, ...]:
        values: tuple[int, ...] = layout.unpack(self.take(layout.size, what))
        return values

    def u8(self, what: str) -> int:
        return self.unpack(_U8, what)[0]

    def u16(self, what: str) -> int:
        return self.unpack(_U16, what)[0]

    def u32(self, what: str) -> int:
        return self.unpack(_U32, what)[0]

    def u64(self, what: str) -> int:
        return self.unpack(_U64, what)[0]

    def finish(self) -> None:
        """Insists that the entries used the whole payload."""
        if self.remaining:
            raise FormatProblem(
                f"corrupt: section {self._section} payload has {self.remaining}"
                " bytes after its entries"
            )
