"""An independent writer of traces (mprof(5), THE TRACE FILE), written from
the man page, so that the replayer can be tested on traces whose every
event is known, before and apart from the monitor's writer.

Events are given per thread, in each thread's order; where each falls in the
process's one order is given by `at` (any sortable numbers), and the writer
turns that into sequence numbers and every field into its difference from the
thread's previous one.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import zstandard

ALLOC, FREE, REALLOC = 1, 2, 3
MALLOC, CALLOC, REALLOC_FUNCTION, MEMALIGN, NEW, FREE_FUNCTION, DELETE = 6, 7, 8, 9, 10, 11, 12

MAGIC = b"MPROFTRC"
HEADER_SIZE = 64
BLOCK_EVENTS, BLOCK_END = 1, 2
START_UNIX_NS = 1_700_000_000_000_000_000
START_NS = 5_000_000_000
START_TSC = 1_000_000
TICKS_PER_SEQUENCE = 1000  # an event's default reading: START_TSC + this * its sequence number
NS_PER_TICK = 2  # the clocks of every block say so


@dataclass(frozen=True)
class Event:
    op: int  # ALLOC, FREE or REALLOC
    function: int
    address: int  # the block; a realloc's new block
    at: float  # its place in the process's one order
    size: int = 0
    alignment: int = 0
    old_address: int = 0  # a realloc's old block
    returned_at: float | None = None  # where a realloc's new block came back (default: just after `at`)
    path: int = 0
    ticks: int | None = None  # its time-stamp counter reading (default: from its sequence number)


@dataclass
class Layout:
    """Where the writer put things, for tests that damage a trace."""

    blocks: list[tuple[int, int, int]] = field(default_factory=list)  # (offset, kind, stored size)
    sequences: dict[float, int] = field(default_factory=dict)  # `at` -> its sequence number
    size: int = 0


def uv(value: int) -> bytes:
    assert 0 <= value < 1 << 64
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def sv(value: int) -> bytes:
    value = (value + (1 << 63)) % (1 << 64) - (1 << 63)  # as the writer's int64 difference
    return uv(((value << 1) ^ (value >> 63)) % (1 << 64))


def _sequences(threads: dict[int, list[Event]], sequence_step: int) -> dict[float, int]:
    points = []
    for events in threads.values():
        for event in events:
            points.append(event.at)
            if event.op == REALLOC:
                points.append(event.returned_at if event.returned_at is not None else event.at + 0.5)
    assert len(points) == len(set(points)), "two events at one place in the order"
    return {point: 1 + rank * sequence_step for rank, point in enumerate(sorted(points))}


def _encode(events: list[Event], sequences: dict[float, int]) -> list[bytes]:
    last_sequence, last_ticks, last_address = 0, START_TSC, 0
    encoded = []
    for event in events:
        sequence = sequences[event.at]
        ticks = event.ticks if event.ticks is not None else START_TSC + TICKS_PER_SEQUENCE * sequence
        out = bytearray([event.op]) + sv(sequence - last_sequence) + sv(ticks - last_ticks) + uv(event.function)
        last_sequence, last_ticks = sequence, ticks
        if event.op == ALLOC:
            out += uv(event.size) + uv(event.alignment) + sv(event.address - last_address) + uv(event.path)
        elif event.op == FREE:
            out += sv(event.address - last_address)
        else:
            returned = event.returned_at if event.returned_at is not None else event.at + 0.5
            out += uv(sequences[returned] - sequence) + uv(event.size)
            out += sv(event.old_address - last_address) + sv(event.address - event.old_address) + uv(event.path)
        last_address = event.address
        encoded.append(bytes(out))
    return encoded


def _block(kind: int, thread: int, raw_size: int, stored: bytes, tsc: int) -> bytes:
    ns = START_NS + (tsc - START_TSC) * NS_PER_TICK
    return struct.pack("<IIIIQQ", kind, thread, raw_size, len(stored), tsc, ns) + stored


def write_trace(path: Path, threads: dict[int, list[Event]], *, block_events: int = 1000, sequence_step: int = 1,
                end: bool = True, pid: int = 4242) -> Layout:
    """Writes the trace of threads (number: its events in its order), each
    thread's events in blocks of block_events, the threads' blocks taken in
    turn; sequence numbers step by sequence_step (the gaps being events the
    monitor could not record). Without end, no end block, as if killed."""
    sequences = _sequences(threads, sequence_step)
    layout = Layout(sequences=sequences)
    data = bytearray(struct.pack("<8sHHIQQQ24x", MAGIC, 1, HEADER_SIZE, pid, START_UNIX_NS, START_NS, START_TSC))
    streams = {number: _encode(events, sequences) for number, events in threads.items()}
    cursors = dict.fromkeys(streams, 0)
    compressor = zstandard.ZstdCompressor(level=1)
    tsc = START_TSC + TICKS_PER_SEQUENCE * (max(sequences.values(), default=0) + 1)
    while any(cursors[number] < len(stream) for number, stream in streams.items()):
        for number, stream in streams.items():
            chosen = stream[cursors[number]:cursors[number] + block_events]
            if not chosen:
                continue
            cursors[number] += len(chosen)
            raw = b"".join(chosen)
            stored = compressor.compress(raw)
            layout.blocks.append((len(data), BLOCK_EVENTS, len(stored)))
            data += _block(BLOCK_EVENTS, number, len(raw), stored, tsc)
    if end:
        count = sum(len(events) for events in threads.values())
        last = max(sequences.values(), default=0) + sequence_step - 1
        layout.blocks.append((len(data), BLOCK_END, 16))
        data += _block(BLOCK_END, 0, 0, struct.pack("<QQ", count, last), tsc)
    Path(path).write_bytes(bytes(data))
    layout.size = len(data)
    return layout
