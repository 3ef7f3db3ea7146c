"""A mutation fuzzer for the readers of data files: truncates, flips, splices
and repeats sections of real data files, plants absurd counts, LEB128 values
of 10 and more bytes, sizes past the end and paths of random bytes.  Every
input must be read, or refused in one line naming the file (a non-zero exit
from a command): never a traceback, a hang or memory past a bound.

    python3 tests/fuzz/fuzz.py [--inputs N | --seconds S [--least N]] [--seed S] [--share K]
                               [--commands report,json,db,html] SEED_FILE...

Every input goes through the data file reader (mprof.reducer.datafile) twice,
from the file and through a pipe, which must agree: the same data file, or
the same message.  Every Kth input (--share, default 4: a fixed share of a
quarter) also goes through one of the commands, in turn: mprof report,
report --format json, db and html, which reduce what the reader took (the
resolver, the database, the pages).  A command costs tens of milliseconds on
an input that is read, the reader a fraction of one: 10,000 inputs take
about a minute.

The run tries --inputs inputs (else the environment's MPROF_FUZZ_INPUTS),
or without a count inputs for --seconds (else MPROF_FUZZ_SECONDS, else a
minute), and at least --least of them (harness.Budget).  The monitor
compresses its sections (mprof(5), header flag 16), and a mutation of compressed bytes mostly tests zlib: four in five
inputs are mutations of a seed's uncompressed form (its sections inflated,
the flag clear), one in five is compressed: half of those the inflated
sections mutated and deflated again, half the compressed bytes cut or
flipped.  Four in five mutated files get their CRC made right again, so
that they reach past the integrity check into the section parsers and the
reducer.  The runs happen in one worker process under an address-space
limit, each under an alarm; the commands run in that process, not as
programs.  The worker's and its children's (mprof-resolve's) peak resident
sets (ru_maxrss) are watched after each input: past MAX_RSS fails the run,
naming the input that took it there.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import resource
import struct
import sys
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness import (
    Budget,
    add_budget_arguments,
    attempt,
    budget,
    flip,
    in_process,
    peak_rss,
    start_alarms,
    truncate,
    uv,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
HEADER = 64
FLAG_COMPRESSED = 0x10  # in the low byte of the header's flags, at offset 12
SECTION = struct.Struct("<4sIQ")
MEMORY_LIMIT = 2 << 30  # bytes of address space for the worker
MAX_RSS = 200 << 20  # bytes resident, the worker's or a child's
SECONDS_PER_RUN = 20
PIPE_BUFFER = 60_000  # an input this short is written into a pipe whole, before it is read
COMPRESSED_SHARE = 5  # one input in this many is a compressed file


@dataclass(frozen=True)
class Seed:
    """A real data file in three forms, each with its CRC right."""
    plain: bytes  # the sections as they are, flag 16 clear
    inflated: bytes  # flag 16 set, the sections as they are before deflating
    compressed: bytes  # as the monitor writes it


def flagged(data: bytes, compressed: bool) -> bytes:
    """data with flag 16 set or clear (data's CRC left as it is)."""
    flags = data[12] | FLAG_COMPRESSED if compressed else data[12] & ~FLAG_COMPRESSED
    return data[:12] + bytes([flags]) + data[13:]


def deflated(data: bytes, level: int) -> bytes:
    """The bytes after the header as one zlib stream (the flag as it is)."""
    return data[:HEADER] + zlib.compress(data[HEADER:], level) if len(data) >= HEADER else data


def seed_of(data: bytes) -> Seed:
    if not data[12] & FLAG_COMPRESSED:
        inflated = with_crc(flagged(data, True))
        return Seed(data, inflated, deflated(inflated, 6))
    inflated = data[:HEADER] + zlib.decompress(data[HEADER:])
    return Seed(with_crc(flagged(inflated, False)), inflated, data)


def sections(data: bytes) -> list[tuple[int, bytes, int]]:
    """(header offset, tag, payload size) of each section that fits."""
    found, offset = [], HEADER
    while offset + SECTION.size <= len(data):
        tag, _, size = SECTION.unpack_from(data, offset)
        found.append((offset, tag, size))
        if tag == b"END " or offset + SECTION.size + size > len(data):
            break
        offset += SECTION.size + size
    return found


def with_crc(data: bytes) -> bytes:
    """The file with its END section's CRC made right for what precedes it."""
    ends = [offset for offset, tag, _ in sections(data) if tag == b"END "]
    if not ends or ends[-1] + SECTION.size + 8 > len(data):
        return data
    end = ends[-1]
    return data[:end + SECTION.size] + struct.pack("<I", zlib.crc32(data[:end])) + data[end + SECTION.size + 4:]


def _payload_span(data: bytes, generator: random.Random) -> tuple[int, int] | None:
    spans = [(offset + SECTION.size, offset + SECTION.size + size) for offset, tag, size in sections(data)
             if tag != b"END " and size and offset + SECTION.size + size <= len(data)]
    return generator.choice(spans) if spans else None


def splice(data: bytes, generator: random.Random) -> bytes:
    """One section's payload in place of another's, sizes fixed up."""
    found = [s for s in sections(data) if s[1] != b"END "]
    if len(found) < 2:
        return flip(data, generator)
    (target, tag, size), (source, _, source_size) = generator.sample(found, 2)
    payload = data[source + SECTION.size:source + SECTION.size + source_size]
    header = SECTION.pack(tag, 0, len(payload))
    return data[:target] + header + payload + data[target + SECTION.size + size:]


def repeat(data: bytes, generator: random.Random) -> bytes:
    found = sections(data)
    offset, _, size = generator.choice(found)
    whole = data[offset:offset + SECTION.size + size]
    return data[:offset] + whole + data[offset:]


def absurd_count(data: bytes, generator: random.Random) -> bytes:
    span = _payload_span(data, generator)
    if not span or span[1] - span[0] < 8:
        return flip(data, generator)
    value = generator.choice([1 << 63, (1 << 64) - 1, 1 << 32, 10 ** 12, 0])
    return data[:span[0]] + struct.pack("<Q", value) + data[span[0] + 8:]


def size_past_end(data: bytes, generator: random.Random) -> bytes:
    offset, tag, _ = generator.choice(sections(data))
    size = generator.choice([len(data), 1 << 40, (1 << 64) - 1])
    return data[:offset] + SECTION.pack(tag, 0, size) + data[offset + SECTION.size:]


def random_path(data: bytes, generator: random.Random) -> bytes:
    """The executable's path in PROG replaced by as many random bytes."""
    found = [offset for offset, tag, _ in sections(data) if tag == b"PROG"]
    if not found:
        return flip(data, generator)
    start = found[0] + SECTION.size
    (length,) = struct.unpack_from("<I", data, start)
    noise = bytes(generator.randrange(256) for _ in range(min(length, len(data) - start - 4)))
    return data[:start + 4] + noise + data[start + 4 + len(noise):]


def _uv_spans(payload: bytes) -> list[tuple[int, int]]:
    """(start, end) of each LEB128 value after a payload's u64 count."""
    spans, at = [], 8
    while at < len(payload):
        start = at
        while at < len(payload) and payload[at] & 0x80:
            at += 1
        at += 1
        spans.append((start, min(at, len(payload))))
    return spans


def _uv_sections(data: bytes) -> list[tuple[int, bytes]]:
    """(header offset, payload) of each section made of LEB128 values that
    holds at least one."""
    return [(offset, data[offset + SECTION.size:offset + SECTION.size + size]) for offset, tag, size in sections(data)
            if tag in (b"ADDR", b"NODE", b"PATH", b"TIME") and size > 8 and offset + SECTION.size + size <= len(data)]


def _with_payload(data: bytes, offset: int, payload: bytes) -> bytes:
    """Section at OFFSET with a new payload, its size made to agree."""
    tag, _, size = SECTION.unpack_from(data, offset)
    return data[:offset] + SECTION.pack(tag, 0, len(payload)) + payload + data[offset + SECTION.size + size:]


def absurd_value(data: bytes, generator: random.Random) -> bytes:
    """One value of ADDR, SITE, LEAK or PAIR (an address, an index, a count or
    a byte figure) replaced by an extreme one; the section's size stays right,
    so the value gets past the framing to the checks of meaning."""
    found = _uv_sections(data)
    if not found:
        return flip(data, generator)
    offset, payload = generator.choice(found)
    start, end = generator.choice(_uv_spans(payload))
    (count,) = struct.unpack_from("<Q", payload)
    value = generator.choice([0, 1, count, count + 1, 1 << 32, 1 << 47, 1 << 63, (1 << 64) - 1,
                              generator.getrandbits(64)])
    return _with_payload(data, offset, payload[:start] + uv(value) + payload[end:])


def long_varint(data: bytes, generator: random.Random) -> bytes:
    """One LEB128 value of ADDR, NODE, PATH or TIME spelled in 10 to 40
    bytes: its own value padded with zero groups, or a value past 64 bits;
    the section's size stays right."""
    found = _uv_sections(data)
    if not found:
        return flip(data, generator)
    offset, payload = generator.choice(found)
    start, end = generator.choice(_uv_spans(payload))
    value = 0
    for shift, byte in enumerate(payload[start:end]):
        value |= (byte & 0x7F) << (7 * shift)
    groups = generator.randint(10, 40)
    if generator.random() < 0.5:
        value = (1 << generator.randint(64, 7 * groups - 1)) | value
    spelled = bytes(((value >> (7 * i)) & 0x7F) | (0x80 if i < groups - 1 else 0) for i in range(groups))
    return _with_payload(data, offset, payload[:start] + spelled + payload[end:])


def absurd_module(data: bytes, generator: random.Random) -> bytes:
    """One module of MODS with an extreme bias, start, end or flags, or its
    path or build-id bytes made random."""
    found = [(offset, size) for offset, tag, size in sections(data)
             if tag == b"MODS" and size > 8 and offset + SECTION.size + size <= len(data)]
    if not found:
        return flip(data, generator)
    offset, size = found[0]
    payload = bytearray(data[offset + SECTION.size:offset + SECTION.size + size])
    modules, at = [], 8
    while at + 28 <= len(payload):
        build_id, path = payload[at + 25], struct.unpack_from("<H", payload, at + 26)[0]
        modules.append(at)
        at += 28 + build_id + path
    if not modules:
        return flip(data, generator)
    module = generator.choice(modules)
    field = generator.randrange(5)
    if field < 3:
        struct.pack_into("<Q", payload, module + 8 * field,
                         generator.choice([0, 1 << 47, 1 << 63, (1 << 64) - 1, generator.getrandbits(64)]))
    elif field == 3:
        payload[module + 24] = generator.randrange(256)
    else:
        build_id, path = payload[module + 25], struct.unpack_from("<H", payload, module + 26)[0]
        for at in range(module + 28, module + 28 + build_id + path):
            payload[at] = generator.randrange(256)
    return _with_payload(data, offset, bytes(payload))


MUTATIONS: tuple[Callable[[bytes, random.Random], bytes], ...] = (
    truncate, flip, splice, repeat, absurd_count, long_varint, size_past_end, random_path, absurd_value,
    absurd_module)


def mutated_sections(data: bytes, generator: random.Random) -> tuple[str, bytes]:
    mutation = generator.choice(MUTATIONS)
    data = mutation(data, generator)
    if generator.random() < 0.8:
        data = with_crc(data)
    return mutation.__name__, data


def mutated(seed: Seed, generator: random.Random) -> tuple[str, bytes]:
    if generator.randrange(COMPRESSED_SHARE):
        return mutated_sections(seed.plain, generator)
    if generator.random() < 0.5:
        # The sections of a compressed file mutated, then deflated: through
        # the inflating reader to the section parsers.
        name, data = mutated_sections(seed.inflated, generator)
        return f"{name}, deflated", deflated(data, generator.randint(1, 9))
    mutation = generator.choice((truncate, flip))
    return f"{mutation.__name__} of the compressed bytes", mutation(seed.compressed, generator)


@dataclass
class Results:
    runs: Counter[str] = field(default_factory=Counter)       # per command, and "reader"
    reports: Counter[str] = field(default_factory=Counter)    # exit 0 (the reader: a data file)
    refusals: Counter[str] = field(default_factory=Counter)   # one line, non-zero
    failures: list[str] = field(default_factory=list)
    inputs: int = 0


def run_one(main: Callable[[list[str]], int], command: str, path: Path, scratch: Path) -> tuple[int, str, str]:
    arguments = {"report": ["report", str(path)], "json": ["report", "--format", "json", str(path)],
                 "db": ["db", str(path), "-o", str(scratch / "fuzz.db")],
                 "html": ["html", str(path), "-o", str(scratch / "fuzz.html")]}[command]
    return in_process(main, arguments)


def judge(command: str, path: Path, code: int, stdout: str, stderr: str) -> str | None:
    """What is wrong with a run, or None."""
    lines = stderr.splitlines()
    if code == 0:
        if any(not line.startswith("mprof: ") for line in lines):
            return f"exit 0 with stray output on stderr: {stderr[:200]!r}"
        if command in ("report", "json") and not stdout:
            return "exit 0 without a report"
        return None
    if len(lines) != 1 or not lines[0].startswith(f"mprof: {path}"):
        return f"exit {code} without one line naming the file: {stderr[:300]!r}"
    return None


def judged_run(main: Callable[[list[str]], int], command: str, path: Path, scratch: Path) -> tuple[int, str | None]:
    code, stdout, stderr = run_one(main, command, path, scratch)
    return code, judge(command, path, code, stdout, stderr)


def read_both_ways(path: Path, data: bytes) -> tuple[int, str | None]:
    """The reader on the file, and through a pipe: 0 and None for a data
    file, 1 and None for a refusal in one line naming the file, else what
    is wrong."""
    from mprof.reducer import datafile
    from mprof.reducer.errors import DataFileError

    outcomes: list[object] = []
    for piped in (False, True) if len(data) <= PIPE_BUFFER else (False,):
        try:
            if piped:
                reader, writer = os.pipe()
                os.write(writer, data)
                os.close(writer)
                with open(reader, "rb") as stream:
                    outcomes.append(datafile.parse(datafile.gather(stream, path), path))
            else:
                outcomes.append(datafile.read(path))
        except DataFileError as error:
            message = str(error)
            if "\n" in message or not message.startswith(f"{path}: "):
                return -1, f"refused without one line naming the file: {message[:300]!r}"
            outcomes.append(message)
    if len(outcomes) == 2 and outcomes[0] != outcomes[1]:
        return -1, f"the file and the pipe disagree: {str(outcomes[0])[:200]!r} and {str(outcomes[1])[:200]!r}"
    if isinstance(outcomes[0], datafile.DataFile):
        problem = python_disagrees(path, data, outcomes[0])
        if problem:
            return -1, problem
    return (1 if isinstance(outcomes[0], str) else 0), None


def python_disagrees(path: Path, data: bytes, read: object) -> str | None:
    """What the reader took from NODE and PATH (libmprof-reduce's decoding)
    against sections.py's reading of the same payloads, the one that
    explains a refusal: a file one accepts, the other must accept alike."""
    import io

    from mprof.reducer import datafile, sections
    from mprof.reducer import format as fmt
    from mprof.reducer.errors import FormatProblem

    assert isinstance(read, datafile.DataFile)
    inflated = memoryview(datafile._gather(io.BytesIO(data), len(data), b""))
    header = datafile._parse_header(inflated)
    payloads = datafile._split_sections(inflated, header.section_count)
    depth = header.stack_depth if header.call_graph else header.leak_depth
    try:
        nodes = sections.parse_nodes(payloads[fmt.TAG_NODES], read.addresses)
        paths = sections.parse_paths(payloads[fmt.TAG_PATHS], nodes, depth)
    except FormatProblem as problem:
        return f"libmprof-reduce accepted NODE and PATH, sections.py refuses them: {problem}"
    if (nodes, paths) != (read.nodes, read.paths):
        return "libmprof-reduce and sections.py read NODE and PATH differently"
    return None


def fuzz(seeds: list[Seed], inputs: Budget, seed: int, commands: list[str], share: int = 4) -> Results:
    sys.path.insert(0, str(REPO_ROOT / "src"))
    from mprof.cli.main import main

    # argparse looks for a translation of its words at each command's start,
    # in a dozen files, unless the language is C: mprof has no translation.
    os.environ["LANGUAGE"] = "C"
    generator = random.Random(seed)
    results = Results()
    start_alarms()
    over = False
    with tempfile.TemporaryDirectory(prefix="mprof-fuzz-") as directory:
        scratch = Path(directory)
        path = scratch / "input.mprof"
        for number in inputs.numbers(results.failures):
            results.inputs += 1
            mutation, data = mutated(generator.choice(seeds), generator)
            path.write_bytes(data)
            chosen = ["reader"]
            if commands and number % share == 0:
                chosen.append(commands[number // share % len(commands)])
            for command in chosen:
                results.runs[command] += 1
                code, problem = attempt(functools.partial(read_both_ways, path, data) if command == "reader"
                                        else functools.partial(judged_run, main, command, path, scratch),
                                        SECONDS_PER_RUN)
                if not problem and not over and peak_rss() > MAX_RSS:
                    over = True
                    problem = f"peak resident set {peak_rss():,} bytes, past {MAX_RSS:,}"
                if problem:
                    kept = scratch.parent / f"mprof-fuzz-failure-{seed}-{number}.mprof"
                    kept.write_bytes(data)
                    results.failures.append(f"{command} on input {number} ({mutation}, kept as {kept}): {problem}")
                elif code == 0:
                    results.reports[command] += 1
                else:
                    results.refusals[command] += 1
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("seeds", nargs="+", type=Path, help="real data files to mutate")
    add_budget_arguments(parser)
    parser.add_argument("--seed", type=int, default=1988, help="random seed, for a run that can be repeated")
    parser.add_argument("--share", type=int, default=4, metavar="K",
                        help="every Kth input also goes through one of the commands, in turn (default %(default)s)")
    parser.add_argument("--commands", default="report,json,db,html",
                        help="the commands the share of inputs goes through (default %(default)s)")
    args = parser.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    started = time.monotonic()
    results = fuzz([seed_of(path.read_bytes()) for path in args.seeds], budget(args), args.seed,
                   [command for command in args.commands.split(",") if command], args.share)
    seconds = time.monotonic() - started
    for command in results.runs:
        print(f"{command}: {results.runs[command]} inputs, {results.reports[command]} "
              f"{'read' if command == 'reader' else 'reported'}, {results.refusals[command]} refused in one line")
    print(f"{results.inputs} inputs in {seconds:.1f} s; peak resident set {peak_rss() / (1 << 20):.1f} MB "
          f"(the worker's or a child's)")
    for failure in results.failures:
        print(f"FAILED {failure}")
    print(f"{sum(results.runs.values()) - len(results.failures)} passed, {len(results.failures)} failed")
    return 1 if results.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
