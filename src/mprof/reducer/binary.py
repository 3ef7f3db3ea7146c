"""Bounds-checked reading of one section's payload."""

from __future__ import annotations

import struct

from .errors import FormatProblem

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

# mprof(5): a uv is at most 10 bytes and fits in 64 bits.  Ten bytes carry 70
# bits, so the tenth byte may hold only the value's top bit.
UV_MAX_BYTES = 10
_UV_LAST_MAX = 1


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

    def u32(self, what: str) -> int:
        return self.unpack(_U32, what)[0]

    def u64(self, what: str) -> int:
        return self.unpack(_U64, what)[0]

    def uvs(self, count: int, what: str) -> list[int]:
        """Reads count uv fields of one entry.

        Varint entries are the bulk of a file, so one-byte values (small
        indices and counters) are taken inline, without a call of uv() each.
        """
        payload = self._payload
        end = len(payload)
        values: list[int] = []
        for _ in range(count):
            pos = self._pos
            if pos < end and payload[pos] < 0x80:
                values.append(payload[pos])
                self._pos = pos + 1
            else:
                values.append(self.uv(what))
        return values

    def uv(self, what: str) -> int:
        """Reads one unsigned LEB128 varint.

        Encodings longer than needed are accepted, since mprof(5) asks only
        for at most 10 bytes and a value that fits in 64 bits.
        """
        payload, pos = self._payload, self._pos
        end = len(payload)
        value = 0
        for shift in range(0, 7 * UV_MAX_BYTES, 7):
            if pos == end:
                raise FormatProblem(f"corrupt: section {self._section} payload ends inside {what}")
            byte = payload[pos]
            pos += 1
            if shift == 7 * (UV_MAX_BYTES - 1):
                if byte & 0x80:
                    raise FormatProblem(
                        f"corrupt: section {self._section} {what} has a varint"
                        f" longer than {UV_MAX_BYTES} bytes"
                    )
                if byte > _UV_LAST_MAX:
                    raise FormatProblem(
                        f"corrupt: section {self._section} {what} has a varint"
                        " that does not fit in 64 bits"
                    )
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
        self._pos = pos
        return value

    def finish(self) -> None:
        """Insists that the entries used the whole payload."""
        if self.remaining:
            raise FormatProblem(
                f"corrupt: section {self._section} payload has {self.remaining}"
                " bytes after its entries"
            )
