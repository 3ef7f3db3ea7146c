"""Reading and validating a whole mprof data file.

read() returns a DataFile only for a file that is valid in every respect
mprof(5) states; anything else raises DataFileError with a one-line reason.
Checks run from the outside in: header, then section framing and checksum,
then each payload.  So a truncated file is called truncated and a damaged
byte inside a payload is called a checksum mismatch, rather than whatever
nonsense the damaged payload would decode to.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass

from . import format as fmt
from . import sections
from .errors import DataFileError, FormatProblem
from .records import (
    Bin,
    CallPath,
    ClassBytes,
    DataFile,
    Header,
    Module,
    Node,
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
    "Module",
    "Node",
    "Program",
    "Summary",
    "TimePoint",
    "parse",
    "read",
]

PathArg = str | os.PathLike[str]


def read(path: PathArg) -> DataFile:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        # strerror alone: the path is already at the start of the message.
        raise DataFileError(path, f"cannot open: {e.strerror or e}") from None
    return parse(data, path)


def parse(data: bytes, path: PathArg = "<data>") -> DataFile:
    """Decodes a data file already in memory; path only names it in errors."""
    try:
        return _parse(memoryview(data), os.fspath(path))
    except FormatProblem as problem:
        raise DataFileError(path, str(problem)) from None


def _parse(data: memoryview, path: str) -> DataFile:
    header = _parse_header(data)
    payloads = _split_sections(data)
    addresses = sections.parse_addresses(payloads[fmt.TAG_ADDRS])
    nodes = sections.parse_nodes(payloads[fmt.TAG_NODES], addresses)
    return DataFile(
        path=path,
        header=header,
        program=sections.parse_program(payloads[fmt.TAG_PROGRAM]),
        modules=sections.parse_modules(payloads[fmt.TAG_MODULES]),
        summary=sections.parse_summary(payloads[fmt.TAG_SUMMARY]),
        bins=sections.parse_bins(payloads[fmt.TAG_BINS]),
        nodes=nodes,
        paths=sections.parse_paths(payloads[fmt.TAG_PATHS], nodes,
                                   header.stack_depth if header.call_graph else header.leak_depth),
        timeline=sections.parse_timeline(payloads[fmt.TAG_TIMELINE]),
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
    if section_count != len(fmt.SECTION_ORDER):
        raise FormatProblem(
            f"corrupt: header says {section_count} sections, format version"
            f" {fmt.VERSION} has {len(fmt.SECTION_ORDER)}"
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
    )


@dataclass(frozen=True)
class _Section:
    header_offset: int
    payload: memoryview


def _split_sections(data: memoryview) -> dict[bytes, memoryview]:
    """Walks the sections in their required order and checks the framing.

    Returns each section's payload by tag, after checking that nothing follows
    END and that the checksum matches.
    """
    found: dict[bytes, _Section] = {}
    pos = fmt.HEADER_SIZE
    for tag in fmt.SECTION_ORDER:
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
            raise FormatProblem(f"truncated: section {name} needs {size} bytes, {remain} remain")
        payload_start = pos + fmt.SECTION_HEADER_SIZE
        found[tag] = _Section(pos, data[payload_start : payload_start + size])
        pos = payload_start + size
    if pos != len(data):
        raise FormatProblem(f"corrupt: {len(data) - pos} bytes after section END")
    end = found[fmt.TAG_END]
    crc, reserved = fmt.END_PAYLOAD.unpack(end.payload)
    if reserved:
        raise FormatProblem("corrupt: section END reserved field is not zero")
    if zlib.crc32(data[: end.header_offset]) != crc:
        raise FormatProblem("corrupt: checksum mismatch")
    return {tag: section.payload for tag, section in found.items()}
