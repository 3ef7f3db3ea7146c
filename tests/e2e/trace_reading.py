"""An independent reader of the trace format (mprof(5), THE TRACE FILE),
written from the man page alone, to check the monitor's writer against."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import zstandard


@dataclass(frozen=True)
class Event:
    thread: int
    sequence: int
    op: int  # 1 allocation, 2 free, 3 realloc
    function: int
    address: int
    size: int = 0
    alignment: int = 0
    path: int = 0
    old_address: int = 0
    later: int = 0


@dataclass(frozen=True)
class Trace:
    pid: int
    events: list[Event]  # in sequence order
    end_events: int
    end_sequence: int


def _uv(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _sv(data: bytes, at: int) -> tuple[int, int]:
    value, at = _uv(data, at)
    return (value >> 1) ^ -(value & 1), at


def read(path: Path) -> Trace:
    data = path.read_bytes()
    assert data[:8] == b"MPROFTRC"
    version, header_size, pid = struct.unpack_from("<HHI", data, 8)
    assert (version, header_size) == (1, 64)
    at, events, end = header_size, [], None
    last: dict[int, tuple[int, int]] = {}  # thread: (sequence, address)
    while at < len(data):
        kind, thread, raw_size, stored_size = struct.unpack_from("<IIII", data, at)
        body = data[at + 32:at + 32 + stored_size]
        assert len(body) == stored_size
        at += 32 + stored_size
        if kind == 2:
            end = struct.unpack("<QQ", body)
            continue
        assert kind == 1
        raw = zstandard.ZstdDecompressor().decompress(body, max_output_size=raw_size)
        assert len(raw) == raw_size
        sequence, address = last.get(thread, (0, 0))
        i = 0
        while i < len(raw):
            op = raw[i]
            step, i = _sv(raw, i + 1)
            sequence += step
            _, i = _sv(raw, i)  # ticks
            function, i = _uv(raw, i)
            if op == 1:
                size, i = _uv(raw, i)
                alignment, i = _uv(raw, i)
                step, i = _sv(raw, i)
                address += step
                path_entry, i = _uv(raw, i)
                events.append(Event(thread, sequence, op, function, address, size, alignment, path_entry))
            elif op == 2:
                step, i = _sv(raw, i)
                address += step
                events.append(Event(thread, sequence, op, function, address))
            else:
                assert op == 3, op
                later, i = _uv(raw, i)
                size, i = _uv(raw, i)
                step, i = _sv(raw, i)
                old = address + step
                step, i = _sv(raw, i)
                address = old + step
                path_entry, i = _uv(raw, i)
                events.append(Event(thread, sequence, op, function, address, size, 0, path_entry, old, later))
        last[thread] = (sequence, address)
    assert end is not None, "no end block"
    return Trace(pid, sorted(events, key=lambda e: e.sequence), end[0], end[1])
