"""A mutation fuzzer for the reader of traces (mprof-replay prepare, the C
program that `mprof replay` runs first): truncates real traces, flips bits,
plants absurd values in the header and in block headers (kind, thread, raw
and stored sizes), drops, repeats and swaps blocks, adds bytes after the end
block, and rewrites the events inside a block (bytes flipped, values made
extreme, varints of 10 and more bytes, events cut, repeated or dropped) and
compresses it again with sizes that agree (and, mostly, the end block's
count of events), so that the events reach the decoder and the preparation
behind it.  Every input must be prepared (exit
0, its figures in JSON on stdout, the prepared file written) or refused in
one line naming the file with exit 2 (and no prepared file): never a crash,
a hang, "out of memory" or memory past a bound.

    python3 tests/fuzz/fuzz_trace.py [--inputs N | --seconds S [--least N]] [--seed S] [--play-every K] TRACE...

Each input is a run of mprof-replay prepare, a process of its own (a few
milliseconds on a trace of a few hundred events), under an alarm, with the
worker's address-space limit.  Every Kth prepared input (--play-every,
default 4) is also played with the do-nothing allocator (mprof-replay run
--null), which must give its figures or one line.  After each input the
children's peak resident set (ru_maxrss, from wait4) is read: past MAX_RSS
fails the run, naming the input.  The run tries --inputs inputs (else the
environment's MPROF_FUZZ_INPUTS), or without a count inputs for --seconds
(else MPROF_FUZZ_SECONDS, else a minute), and at least --least of them
(harness.Budget).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import zstandard
from harness import Budget, add_budget_arguments, budget, flip, peak_rss, truncate, uv

REPO_ROOT = Path(__file__).resolve().parents[2]
REPLAYER = Path(os.environ.get("MPROF_REPLAY") or REPO_ROOT / "build" / "mprof-replay")
HEADER = 64
BLOCK = struct.Struct("<IIIIQQ")  # kind, thread, raw size, stored size, ticks, nanoseconds
MEMORY_LIMIT = 1 << 30  # bytes of address space, the worker's and so each child's
MAX_RSS = 200 << 20
SECONDS_PER_RUN = 10
EXTREMES = (0, 1, 2, 0x7F, 0x80, 1 << 31, (1 << 32) - 1)
EXTREMES64 = (0, 1, 1 << 32, 1 << 47, 1 << 63, (1 << 64) - 1)


@dataclass
class Block:
    kind: int
    thread: int
    raw_size: int
    ticks: int
    nanoseconds: int
    stored: bytes

    def pack(self, raw_size: int | None = None, stored_size: int | None = None) -> bytes:
        u32 = (1 << 32) - 1
        return BLOCK.pack(self.kind & u32, self.thread & u32, (self.raw_size if raw_size is None else raw_size) & u32,
                          (len(self.stored) if stored_size is None else stored_size) & u32, self.ticks,
                          self.nanoseconds) + self.stored


def blocks(data: bytes) -> list[Block]:
    found, at = [], HEADER
    while at + BLOCK.size <= len(data):
        kind, thread, raw_size, stored_size, ticks, nanoseconds = BLOCK.unpack_from(data, at)
        stored = data[at + BLOCK.size:at + BLOCK.size + stored_size]
        found.append(Block(kind, thread, raw_size, ticks, nanoseconds, stored))
        at += BLOCK.size + stored_size
    return found


def joined(data: bytes, found: list[Block]) -> bytes:
    return data[:HEADER] + b"".join(block.pack() for block in found)


def _u64(value: int) -> bytes:
    return struct.pack("<Q", value & ((1 << 64) - 1))


def header_field(data: bytes, generator: random.Random) -> bytes:
    """The version, header size, pid or a clock made extreme."""
    offset, width = generator.choice([(8, 2), (10, 2), (12, 4), (16, 8), (24, 8), (32, 8), (40, 8)])
    value = generator.choice(EXTREMES64 + (64, 65, 0xFFFF, generator.getrandbits(8 * width)))
    return data[:offset] + (value & ((1 << 8 * width) - 1)).to_bytes(width, "little") + data[offset + width:]


def block_field(data: bytes, generator: random.Random) -> bytes:
    """One block's kind, thread, raw size or stored size, or a clock, made
    extreme; the rest as it was."""
    found = blocks(data)
    if not found:
        return flip(data, generator)
    index = generator.randrange(len(found))
    block = found[index]
    which = generator.randrange(6)
    value = generator.choice(EXTREMES + (block.thread + 1, len(found), generator.getrandbits(32)))
    raw_size = stored_size = None
    if which == 0:
        block.kind = value
    elif which == 1:
        block.thread = value
    elif which == 2:
        raw_size = value
    elif which == 3:
        stored_size = value
    elif which == 4:
        block.ticks = generator.choice(EXTREMES64)
    else:
        block.nanoseconds = generator.choice(EXTREMES64)
    return data[:HEADER] + b"".join(b.pack(raw_size, stored_size) if i == index else b.pack()
                                    for i, b in enumerate(found))


def shuffle_blocks(data: bytes, generator: random.Random) -> bytes:
    """A block dropped, repeated, or two swapped."""
    found = blocks(data)
    if len(found) < 2:
        return flip(data, generator)
    choice = generator.randrange(3)
    i, j = generator.sample(range(len(found)), 2)
    if choice == 0:
        del found[i]
    elif choice == 1:
        found.insert(j, found[i])
    else:
        found[i], found[j] = found[j], found[i]
    if found[-1].kind != 2:  # the end block kept last, mostly
        ends = [block for block in found if block.kind == 2]
        if ends and generator.random() < 0.7:
            found = [block for block in found if block.kind != 2] + ends[-1:]
    if generator.random() < 0.7:
        recounted(found)
    return joined(data, found)


def after_end(data: bytes, generator: random.Random) -> bytes:
    return data + bytes(generator.randrange(256) for _ in range(generator.choice([1, 31, 32, 33, 100])))


def end_counts(data: bytes, generator: random.Random) -> bytes:
    found = blocks(data)
    ends = [block for block in found if block.kind == 2 and len(block.stored) == 16]
    if not ends:
        return flip(data, generator)
    events, last = struct.unpack("<QQ", ends[-1].stored)
    events = generator.choice([0, events - 1, events + 1, (1 << 64) - 1])
    ends[-1].stored = _u64(events) + _u64(last)
    return joined(data, found)


def _raw_spans(raw: bytes) -> list[tuple[int, int]]:
    """(start, end) of every byte and varint after the op bytes, roughly:
    each run of continuation bytes and the byte that ends it."""
    spans, at = [], 0
    while at < len(raw):
        start = at
        while at < len(raw) and raw[at] & 0x80:
            at += 1
        at += 1
        spans.append((start, min(at, len(raw))))
    return spans


# The varints after an event's op and before the fields its op adds:
# sequence, ticks, function; then allocation: size, alignment, address,
# path; free: address; realloc: later, size, two addresses, path.
FIELDS = {1: 3 + 4, 2: 3 + 1, 3: 3 + 5}


def count_events(raw: bytes) -> int | None:
    """The events a block's raw bytes hold, or None if they do not decode."""
    at, count = 0, 0
    while at < len(raw):
        fields = FIELDS.get(raw[at])
        if fields is None:
            return None
        at += 1
        for _ in range(fields):
            while at < len(raw) and raw[at] & 0x80:
                at += 1
            if at == len(raw):
                return None
            at += 1
        count += 1
    return count


def recounted(found: list[Block]) -> None:
    """The end block made to count the events the blocks hold, where they
    decode: so that changed events get past the count to the preparation."""
    total = 0
    for block in found:
        if block.kind == 1:
            try:
                count = count_events(zstandard.ZstdDecompressor().decompress(block.stored, max_output_size=1 << 24))
            except zstandard.ZstdError:
                return
            if count is None:
                return
            total += count
    for block in found:
        if block.kind == 2 and len(block.stored) == 16:
            block.stored = _u64(total) + block.stored[8:]


def events(data: bytes, generator: random.Random) -> bytes:
    """An events block decompressed, its events changed, compressed again
    with its raw and stored sizes made to agree."""
    found = blocks(data)
    candidates = [block for block in found if block.kind == 1 and block.stored]
    if not candidates:
        return flip(data, generator)
    block = generator.choice(candidates)
    try:
        raw = bytearray(zstandard.ZstdDecompressor().decompress(block.stored, max_output_size=1 << 24))
    except zstandard.ZstdError:
        return flip(data, generator)
    if not raw:
        return flip(data, generator)
    spans = _raw_spans(bytes(raw))
    start, end = generator.choice(spans)
    kind = generator.randrange(6)
    if kind == 0:
        raw[generator.randrange(len(raw))] ^= 1 << generator.randrange(8)
    elif kind == 1:  # one value made extreme
        value = generator.choice(EXTREMES64 + (generator.getrandbits(64), 6, 13, 3, 4))
        raw[start:end] = uv(value)
    elif kind == 2:  # one value spelled in 10 to 40 bytes, maybe past 64 bits
        value = 0
        for shift, byte in enumerate(raw[start:end]):
            value |= (byte & 0x7F) << (7 * shift)
        groups = generator.randint(10, 40)
        if generator.random() < 0.5:
            value |= 1 << generator.randint(64, 7 * groups - 1)
        raw[start:end] = bytes(((value >> (7 * i)) & 0x7F) | (0x80 if i < groups - 1 else 0) for i in range(groups))
    elif kind == 3:  # cut short
        del raw[generator.randrange(len(raw)):]
    elif kind == 4:  # a stretch repeated, many times over
        other = generator.choice(spans)
        piece = raw[min(start, other[0]):max(end, other[1])]
        raw[start:start] = piece * generator.choice([1, 2, 100, 1000])
    else:  # random bytes
        raw[start:end] = bytes(generator.randrange(256) for _ in range(generator.randint(1, 16)))
    block.stored = zstandard.ZstdCompressor(level=1, write_content_size=generator.random() < 0.9).compress(bytes(raw))
    block.raw_size = len(raw) if generator.random() < 0.9 else generator.choice([0, len(raw) - 1, len(raw) + 1])
    if generator.random() < 0.7:
        recounted(found)
    return joined(data, found)


MUTATIONS: tuple[Callable[[bytes, random.Random], bytes], ...] = (
    truncate, flip, header_field, block_field, shuffle_blocks, after_end, end_counts, events, events, events)


@dataclass
class Results:
    prepared: int = 0
    refused: int = 0
    played: Counter[str] = field(default_factory=Counter)  # "figures", "refused"
    reasons: Counter[str] = field(default_factory=Counter)  # the refusals' words, numbers left out
    failures: list[str] = field(default_factory=list)
    inputs: int = 0


def run(arguments: list[str | Path]) -> tuple[int | None, str, str]:
    try:
        completed = subprocess.run([str(part) for part in arguments], capture_output=True, text=True,
                                   errors="replace", timeout=SECONDS_PER_RUN, check=False)
    except subprocess.TimeoutExpired:
        return None, "", f"no answer in {SECONDS_PER_RUN} s"
    return completed.returncode, completed.stdout, completed.stderr


def judge(path: Path, code: int | None, stdout: str, stderr: str, made: Path | None) -> str | None:
    """What is wrong with a run, or None; made: the prepared file it must
    have written on success and not left on failure."""
    if code is None:
        return stderr
    if code == 0:
        try:
            figures = json.loads(stdout)
        except json.JSONDecodeError:
            figures = None
        if not isinstance(figures, dict) or "events" not in figures:
            return f"exit 0 without figures: {stdout[:200]!r}"
        if stderr:
            return f"exit 0 with stderr: {stderr[:200]!r}"
        if made is not None and not made.is_file():
            return "exit 0 without its prepared file"
        return None
    lines = stderr.splitlines()
    if code != 2 or len(lines) != 1 or not lines[0].startswith(f"mprof-replay: {path}: ") or stdout:
        return f"exit {code} without one line naming the file: {stderr[:300]!r}"
    if "out of memory" in lines[0]:
        return f"out of memory: {lines[0]}"
    if made is not None and made.exists():
        return "a refused trace left a prepared file"
    return None


def _reason(stderr: str) -> str:
    """A refusal's words, without the file's name and numbers."""
    return re.sub(r"0x[0-9a-f]+|[0-9]+|\(.*\)", "N", stderr.split(": ", 2)[-1].strip())


def fuzz(seeds: list[bytes], inputs: Budget, seed: int, play_every: int) -> Results:
    generator = random.Random(seed)
    results = Results()
    over = False
    with tempfile.TemporaryDirectory(prefix="mprof-fuzz-trace-") as directory:
        scratch = Path(directory)
        path, prepared = scratch / "input.trace", scratch / "input.prepared"
        for number in inputs.numbers(results.failures):
            results.inputs += 1
            mutation = generator.choice(MUTATIONS)
            data = mutation(generator.choice(seeds), generator)
            path.write_bytes(data)
            prepared.unlink(missing_ok=True)
            code, stdout, stderr = run([REPLAYER, "prepare", path, prepared])
            problem = judge(path, code, stdout, stderr, prepared)
            if not problem and code == 0:
                results.prepared += 1
                if results.prepared % play_every == 0:
                    played, stdout, stderr = run([REPLAYER, "run", prepared, "--null", "--samples", "10"])
                    trouble = judge(prepared, played, stdout, stderr, None)
                    if trouble:
                        problem = f"played: {trouble}"
                    else:
                        results.played["figures" if played == 0 else "refused"] += 1
                        if played:
                            results.reasons["run --null: " + _reason(stderr)] += 1
            elif not problem:
                results.refused += 1
                results.reasons[_reason(stderr)] += 1
            if not problem and not over and peak_rss(resource.RUSAGE_CHILDREN) > MAX_RSS:
                over = True
                problem = f"a child's peak resident set, {peak_rss(resource.RUSAGE_CHILDREN):,} bytes, past {MAX_RSS:,}"
            if problem:
                kept = scratch.parent / f"mprof-fuzz-trace-failure-{seed}-{number}.trace"
                kept.write_bytes(data)
                results.failures.append(f"input {number} ({mutation.__name__}, kept as {kept}): {problem}")
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("seeds", nargs="+", type=Path, help="real traces to mutate")
    add_budget_arguments(parser)
    parser.add_argument("--seed", type=int, default=1988, help="random seed, for a run that can be repeated")
    parser.add_argument("--play-every", type=int, default=4, metavar="K",
                        help="every Kth prepared input is also played (default %(default)s)")
    args = parser.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    started = time.monotonic()
    results = fuzz([path.read_bytes() for path in args.seeds], budget(args), args.seed, args.play_every)
    seconds = time.monotonic() - started
    print(f"prepare: {results.inputs} inputs, {results.prepared} prepared, {results.refused} refused in one line")
    for reason, count in results.reasons.most_common():
        print(f"  {count:6} {reason}")
    print(f"run --null: {sum(results.played.values())} played, {results.played['figures']} gave figures, "
          f"{results.played['refused']} refused in one line")
    # A child's figure counts from its fork: it is at least the worker's.
    resident = peak_rss(resource.RUSAGE_CHILDREN)
    print(f"{results.inputs} inputs in {seconds:.1f} s; peak resident set {resident / (1 << 20):.1f} MB "
          f"(a child's or the worker's)")
    for failure in results.failures:
        print(f"FAILED {failure}")
    print(f"{results.inputs - len(results.failures)} passed, {len(results.failures)} failed")
    return 1 if results.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
