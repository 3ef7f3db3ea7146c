"""Reading and validating a whole mprof data file.

read() returns a DataFile only for a file that is valid in every respect
mprof(5) states; anything else raises DataFileError with a one-line reason.
Checks run from the outside in: header, then section framing and checksum,
then each payload.  So a truncated file is called truncated and a damaged
byte inside a payload is called a checksum mismatch, rather than whatever
nonsense the damaged payload would decode to.

A file is read as it is judged (gather()): the header, then each section's
header and its payload, in pieces of at most CHUNK bytes, so that what is
held grows with the bytes that arrive, never with a size the file claims.
Reading stops at the first problem and hands what it read to the parser,
which names it as it would in the whole file; only what the bytes read
cannot show (a section longer than the rest of a regular file, bytes after
END) is named by the reader itself, in the parser's words.

A compressed file (header flag 16) is read the same way, its sections
inflated as they are asked for (_Inflating): the parser gets its header and
its sections as an uncompressed file would hold them, and the reader names
what only the stream shows (cut short, damaged, bytes after it).
"""

from __future__ import annotations

import io
import os
import stat
import zlib
from dataclasses import dataclass
from typing import BinaryIO

from . import core, sections
from . import format as fmt
from .errors import DataFileError, FormatProblem
from .records import (
    Bin,
    CallPath,
    ClassBytes,
    DataFile,
    Header,
    LeakScan,
    Module,
    Node,
    PoolFrame,
    Program,
    Summary,
    TimePoint,
)

__all__ = [
    "Bin",
    "CallPath",
    "ClassBytes",
    "DataFile",
    "DataFileError",
    "Header",
    "LeakScan",
    "Module",
    "Node",
    "PoolFrame",
    "Program",
    "Summary",
    "TimePoint",
    "gather",
    "parse",
    "read",
]

PathArg = str | os.PathLike[str]

# The most read at once: a stream's bytes are kept as they come.  Also the
# most a compressed file's sections are inflated by at each step.
CHUNK = 1 << 20
# Bytes after END (or after the compressed sections) that a stream is read
# on for, to count them.
TRAILING_COUNTED = 16 << 20
# zlib's deflate makes at most 1032 bytes of each byte it stores (a 258-byte
# match coded in 2 bits), so a regular file's size bounds what its compressed
# sections can inflate to, and what a section of them may claim.
INFLATE_RATIO = 1032


class _Inflated(bytearray):
    """A compressed file as gather() returns it: its header, then its
    sections inflated, which parse() reads as they are."""


def read(path: PathArg) -> DataFile:
    try:
        file = open(path, "rb")
    except OSError as e:
        # strerror alone: the path is already at the start of the message.
        raise DataFileError(path, f"cannot open: {e.strerror or e}") from None
    with file:
        data = gather(file, path)
    return parse(data, path)


def gather(file: BinaryIO, path: PathArg, start: bytes = b"") -> bytearray:
    """A data file's bytes from file, open at its start (start: those already
    read from it), read as far as they are sound, its sections inflated if
    they are compressed: parse() of what is returned gives the file or the
    reason it is refused.  Raises DataFileError where the bytes read cannot
    show the reason."""
    try:
        status = os.fstat(file.fileno())
        # A regular file's size bounds what its sections may claim; a stream
        # is taken at its word as far as its bytes go.
        return _gather(file, status.st_size if stat.S_ISREG(status.st_mode) else None, start)
    except FormatProblem as problem:
        raise DataFileError(path, str(problem)) from None
    except OSError as e:
        raise DataFileError(path, f"cannot read: {e.strerror or e}") from None


def _gather(file: BinaryIO, size: int | None, start: bytes) -> bytearray:
    sections: _Plain | _Inflating = _Plain(file, size, bytearray(start))
    if not sections.holds(fmt.HEADER_SIZE):
        return sections.data
    if _parse_header(memoryview(sections.data)).flags & fmt.FLAG_COMPRESSED:
        sections = _Inflating(file, size, sections.data)
    data = sections.data
    pos = fmt.HEADER_SIZE
    due = _Due()
    while (tag := due.next()) is not None:
        if not sections.holds(pos + fmt.SECTION_HEADER_SIZE):
            sections.ran_out(tag, pos, None)
            return data
        actual, reserved, length = fmt.SECTION_HEADER.unpack_from(data, pos)
        tag = due.take(actual)
        if actual != tag or reserved or (tag == fmt.TAG_END and length != fmt.END_PAYLOAD.size):
            return data
        pos += fmt.SECTION_HEADER_SIZE
        sections.refuse_claim(tag, pos, length)
        if not sections.holds(pos + length):
            sections.ran_out(tag, pos, length)
            return data
        pos += length
    sections.finish(pos)
    return data


class _Due:
    """The sections in their order, as a walk over a file meets them: each
    required one in turn, and an optional one where the file has it."""

    def __init__(self) -> None:
        self._required = list(fmt.SECTION_ORDER)
        self._taken: set[bytes] = set()

    def next(self) -> bytes | None:
        """The required section due next; None after END."""
        return self._required[0] if self._required else None

    def take(self, actual: bytes) -> bytes:
        """The section due where the file has actual: actual itself if it
        is an optional one due here, else the required one."""
        due = self._required[0]
        if fmt.OPTIONAL_SECTIONS.get(actual) == due and actual not in self._taken:
            self._taken.add(actual)
            return actual
        self._required.pop(0)
        return due


class _Plain:
    """The sections of a file as they are, read as far as they are asked for."""

    def __init__(self, file: BinaryIO, size: int | None, data: bytearray) -> None:
        self.file = file
        self.size = size
        self.data = data

    def holds(self, length: int) -> bool:
        """Reads until data holds length bytes; False if the file ends first."""
        while len(self.data) < length:
            piece = self.file.read(min(length - len(self.data), CHUNK))
            if not piece:
                return False
            self.data.extend(piece)
        return True

    def refuse_claim(self, tag: bytes, pos: int, length: int) -> None:
        """Raises if a regular file is too short for the payload of length at pos."""
        if self.size is not None and length > self.size - pos:
            raise _truncated_section(tag, length, self.size - pos)

    def ran_out(self, tag: bytes, pos: int, length: int | None) -> None:
        """The bytes ended before section tag's header (length None) or its
        payload did: the parser names it from what was read."""

    def finish(self, pos: int) -> None:
        """Raises if bytes follow END, which ends at pos."""
        if self.size is not None:
            if self.size > pos:
                raise _after_end(self.size - pos)
            return
        trailing = _count_rest(self.file)
        if trailing > TRAILING_COUNTED:
            raise FormatProblem(f"corrupt: more than {TRAILING_COUNTED} bytes after section END")
        if trailing:
            raise _after_end(trailing)


class _Inflating:
    """The sections of a compressed file (mprof(5)), inflated as far as they
    are asked for, CHUNK bytes at most at a step: what is held grows with
    what the stream holds, never with a size it claims.  Where the inflated
    bytes end before the sections do, the reason is the stream's (cut short
    or damaged), else the parser names what is missing; a section longer
    than a regular file can inflate to is refused before it is inflated, and
    a stream's own size is learnt where it runs out, so that it is refused
    in the same words."""

    def __init__(self, file: BinaryIO, size: int | None, data: bytearray) -> None:
        self.file = file
        self.size = size
        self.data = _Inflated(data[: fmt.HEADER_SIZE])
        self.inflater = zlib.decompressobj()
        self.input = bytes(data[fmt.HEADER_SIZE :])  # read, not yet inflated
        self.read = len(data)  # bytes read from the file, its header's included
        self.full = False  # the last step filled its CHUNK: more may come with no more input
        self.cut = False  # the file ended before the stream did
        self.damage = ""  # zlib's reason the stream cannot be inflated further

    def _step(self) -> bytes | None:
        """The next inflated bytes (maybe none yet); None when no more can
        come: the stream ended, is damaged or was cut short."""
        if self.inflater.eof or self.cut or self.damage:
            return None
        if not self.input and not self.full:
            self.input = self.file.read(CHUNK)
            self.read += len(self.input)
            if not self.input:
                self.cut = True
                return None
        try:
            piece = self.inflater.decompress(self.input, CHUNK)
        except zlib.error as e:
            self.damage = str(e).rpartition(": ")[2] or str(e)
            return None
        self.input = self.inflater.unconsumed_tail
        self.full = len(piece) == CHUNK
        return piece

    def holds(self, length: int) -> bool:
        """Inflates until data holds length bytes; False if the stream ends first."""
        while len(self.data) < length:
            piece = self._step()
            if piece is None:
                return False
            self.data.extend(piece)
        return True

    def refuse_claim(self, tag: bytes, pos: int, length: int) -> None:
        if self.size is not None:
            self._refuse_claim_within(self.size, tag, pos, length)

    @staticmethod
    def _refuse_claim_within(size: int, tag: bytes, pos: int, length: int) -> None:
        compressed = size - fmt.HEADER_SIZE
        if length > INFLATE_RATIO * compressed - (pos - fmt.HEADER_SIZE):
            raise FormatProblem(f"truncated: section {fmt.tag_name(tag)} needs {length} bytes, more than"
                                f" {compressed} bytes of compressed sections hold")

    def ran_out(self, tag: bytes, pos: int, length: int | None) -> None:
        if length is not None and self.size is None:
            # A stream: its size, if it has not many more bytes, refuses
            # what the file's size would have.
            rest = _count_rest(self.file)
            if rest <= TRAILING_COUNTED:
                self._refuse_claim_within(self.read + rest, tag, pos, length)
        self._refuse_stream(f"in section {fmt.tag_name(tag)}")

    def _refuse_stream(self, where: str) -> None:
        compressed = self.read - fmt.HEADER_SIZE
        if self.cut:
            raise FormatProblem(f"truncated: the compressed sections stop after {compressed} bytes, {where}")
        if self.damage:
            raise FormatProblem(f"corrupt: the compressed sections are damaged ({self.damage}), {where}")

    def finish(self, pos: int) -> None:
        """Raises unless the stream ends with END, at pos, and the file with the stream."""
        inflated = len(self.data) - pos
        del self.data[pos:]
        while inflated <= TRAILING_COUNTED and (piece := self._step()) is not None:
            inflated += len(piece)
        if inflated > TRAILING_COUNTED:
            raise FormatProblem(f"corrupt: more than {TRAILING_COUNTED} bytes after section END")
        self._refuse_stream("after section END")
        if inflated:
            raise _after_end(inflated)
        rest = self.size - self.read if self.size is not None else _count_rest(self.file)
        after = len(self.inflater.unused_data) + rest
        if after > TRAILING_COUNTED and self.size is None:
            raise FormatProblem(f"corrupt: more than {TRAILING_COUNTED} bytes after the compressed sections")
        if after:
            raise FormatProblem(f"corrupt: {after} bytes after the compressed sections")


def _count_rest(file: BinaryIO) -> int:
    """The bytes left in file, read and counted up to just past TRAILING_COUNTED."""
    count = 0
    while count <= TRAILING_COUNTED:
        piece = file.read(CHUNK)
        if not piece:
            break
        count += len(piece)
    return count


def _truncated_section(tag: bytes, size: int, remain: int) -> FormatProblem:
    return FormatProblem(f"truncated: section {fmt.tag_name(tag)} needs {size} bytes, {remain} remain")


def _after_end(count: int) -> FormatProblem:
    return FormatProblem(f"corrupt: {count} bytes after section END")


def parse(data: bytes | bytearray, path: PathArg = "<data>") -> DataFile:
    """Decodes a data file already in memory, or as gather() returned it;
    path only names it in errors."""
    try:
        if (not isinstance(data, _Inflated) and len(data) >= fmt.HEADER_SIZE
                and fmt.HEADER.unpack_from(data)[3] & fmt.FLAG_COMPRESSED):
            data = _gather(io.BytesIO(data), len(data), b"")
        return _parse(memoryview(data), os.fspath(path))
    except FormatProblem as problem:
        raise DataFileError(path, str(problem)) from None


def _parse(data: memoryview, path: str) -> DataFile:
    header = _parse_header(data)
    payloads = _split_sections(data, header.section_count)
    addresses = sections.parse_addresses(payloads[fmt.TAG_ADDRS])
    depth = header.stack_depth if header.call_graph else header.leak_depth
    calls = core.decode(payloads[fmt.TAG_NODES], payloads[fmt.TAG_PATHS], len(addresses), depth)
    if calls is None:
        # The library refuses without a word; the Python reader says why.
        sections.parse_paths(payloads[fmt.TAG_PATHS], sections.parse_nodes(payloads[fmt.TAG_NODES], addresses),
                             depth)
        raise AssertionError("libmprof-reduce refused sections NODE and PATH that sections.py accepts")
    leaks = sections.parse_leaks(payloads[fmt.TAG_LEAKS], calls.figures) if fmt.TAG_LEAKS in payloads else None
    if leaks:
        calls.set_kinds(leaks.kinds)
    return DataFile(
        path=path,
        header=header,
        program=sections.parse_program(payloads[fmt.TAG_PROGRAM]),
        modules=sections.parse_modules(payloads[fmt.TAG_MODULES]),
        summary=sections.parse_summary(payloads[fmt.TAG_SUMMARY]),
        bins=sections.parse_bins(payloads[fmt.TAG_BINS]),
        addresses=addresses,
        calls=calls,
        timeline=sections.parse_timeline(payloads[fmt.TAG_TIMELINE]),
        pools=sections.parse_pools(payloads[fmt.TAG_POOLS]),
        leaks=leaks,
    )


def _parse_header(data: memoryview) -> Header:
    if not data:
        raise FormatProblem("not an mprof data file (empty file)")
    start = bytes(data[: len(fmt.MAGIC)])
    # A short file that starts like the magic is a truncated data file, not
    # some other kind of file.
    if start != fmt.MAGIC[: len(start)]:
        raise FormatProblem("not an mprof data file (bad magic)")
    version_end = len(fmt.MAGIC) + 2
    # The version is judged before the header's length because a newer
    # version may have a different header.
    if len(data) >= version_end:
        version = int.from_bytes(data[len(fmt.MAGIC) : version_end], "little")
        if version > fmt.VERSION:
            raise FormatProblem(
                f"format version {version} is newer than this mprof understands ({fmt.VERSION})"
            )
        if version != fmt.VERSION:
            raise FormatProblem(
                f"unknown format version {version} (this mprof understands {fmt.VERSION})"
            )
    if len(data) < fmt.HEADER_SIZE:
        raise FormatProblem(f"truncated: header needs {fmt.HEADER_SIZE} bytes, {len(data)} remain")
    (
        _magic,
        version,
        header_size,
        flags,
        stack_depth,
        leak_depth,
        pid,
        ppid,
        start_unix_ns,
        elapsed_ns,
        section_count,
        end_signal,
        reserved64,
    ) = fmt.HEADER.unpack_from(data)
    if header_size != fmt.HEADER_SIZE:
        raise FormatProblem(
            f"corrupt: header size is {header_size}, format version {fmt.VERSION}"
            f" has {fmt.HEADER_SIZE}"
        )
    if reserved64:
        raise FormatProblem("corrupt: header reserved field is not zero")
    if flags & ~fmt.KNOWN_FLAGS:
        raise FormatProblem(f"corrupt: unknown header flags 0x{flags & ~fmt.KNOWN_FLAGS:x}")
    if flags & fmt.FLAG_FINAL and flags & fmt.FLAG_CHECKPOINT:
        raise FormatProblem("corrupt: header flags say both final and checkpoint")
    if end_signal and not flags & fmt.FLAG_FINAL:
        raise FormatProblem(f"corrupt: ending signal {end_signal} in a file that is not final")
    if end_signal >= 128:
        raise FormatProblem(f"corrupt: ending signal {end_signal} is not a signal number")
    required = len(fmt.SECTION_ORDER)
    if not required <= section_count <= required + len(fmt.OPTIONAL_SECTIONS):
        optional = ", ".join(fmt.tag_name(tag) for tag in fmt.OPTIONAL_SECTIONS)
        raise FormatProblem(
            f"corrupt: header says {section_count} sections, format version"
            f" {fmt.VERSION} has {required}, or {required + len(fmt.OPTIONAL_SECTIONS)} with {optional}"
        )
    return Header(
        version=version,
        flags=flags,
        stack_depth=stack_depth,
        leak_depth=leak_depth,
        pid=pid,
        ppid=ppid,
        start_unix_ns=start_unix_ns,
        elapsed_ns=elapsed_ns,
        end_signal=end_signal,
        section_count=section_count,
    )


@dataclass(frozen=True)
class _Section:
    header_offset: int
    payload: memoryview


def _split_sections(data: memoryview, section_count: int) -> dict[bytes, memoryview]:
    """Walks the sections in their required order and checks the framing.

    Returns each section's payload by tag, after checking that nothing follows
    END and that the checksum matches.
    """
    found: dict[bytes, _Section] = {}
    pos = fmt.HEADER_SIZE
    due = _Due()
    while (tag := due.next()) is not None:
        name = fmt.tag_name(tag)
        remain = len(data) - pos
        if remain == 0:
            raise FormatProblem(f"truncated: file ends before section {name}")
        if remain < fmt.SECTION_HEADER_SIZE:
            raise FormatProblem(
                f"truncated: section {name} header needs {fmt.SECTION_HEADER_SIZE}"
                f" bytes, {remain} remain"
            )
        actual, reserved, size = fmt.SECTION_HEADER.unpack_from(data, pos)
        tag = due.take(actual)
        name = fmt.tag_name(tag)
        if actual != tag:
            raise FormatProblem(f"corrupt: expected section {name}, found {fmt.tag_name(actual)}")
        if reserved:
            raise FormatProblem(f"corrupt: section {name} reserved field is not zero")
        if tag == fmt.TAG_END and size != fmt.END_PAYLOAD.size:
            raise FormatProblem(
                f"corrupt: section {name} payload is {size} bytes, must be {fmt.END_PAYLOAD.size}"
            )
        remain -= fmt.SECTION_HEADER_SIZE
        if size > remain:
            raise _truncated_section(tag, size, remain)
        payload_start = pos + fmt.SECTION_HEADER_SIZE
        found[tag] = _Section(pos, data[payload_start : payload_start + size])
        pos = payload_start + size
    if pos != len(data):
        raise _after_end(len(data) - pos)
    if section_count != len(found):
        raise FormatProblem(f"corrupt: header says {section_count} sections, the file has {len(found)}")
    end = found[fmt.TAG_END]
    crc, reserved = fmt.END_PAYLOAD.unpack(end.payload)
    if reserved:
        raise FormatProblem("corrupt: section END reserved field is not zero")
    if zlib.crc32(data[: end.header_offset]) != crc:
        raise FormatProblem("corrupt: checksum mismatch")
    return {tag: section.payload for tag, section in found.items()}
