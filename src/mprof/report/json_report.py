"""The whole content of a data file as JSON-ready data, plus derived figures.

Addresses are hex strings because JSON numbers lose precision above 2**53 in
most readers, and 64-bit addresses often are above it.  Lists keep the order
of the file so that the output is deterministic and diffable.
"""

from __future__ import annotations

from typing import Any

from ..reducer import format as fmt
from ..reducer import tree
from ..reducer.datafile import (
    Bin,
    CallPath,
    ClassBytes,
    DataFile,
    Header,
    Module,
    Node,
    Program,
    Summary,
)

Json = dict[str, Any]


def _hex(value: int) -> str:
    return f"0x{value:x}"


def _by_class(values: ClassBytes) -> dict[str, int]:
    return dict(zip(fmt.SIZE_CLASSES, values, strict=True))


def _header(header: Header) -> Json:
    return {
        "version": header.version,
        "flags": header.flags,
        "call_graph": header.call_graph,
        "final": header.final,
        "checkpoint": header.checkpoint,
        "end_signal": header.end_signal,
        "forked": header.forked,
        "compressed": bool(header.flags & fmt.FLAG_COMPRESSED),
        "stack_depth": header.stack_depth,
        "leak_depth": header.leak_depth,
        "pid": header.pid,
        "ppid": header.ppid,
        "start_unix_ns": header.start_unix_ns,
        "elapsed_ns": header.elapsed_ns,
    }


def _program(program: Program) -> Json:
    return {"exe": program.exe, "argv": list(program.argv), "lsan_suppressions": program.lsan_suppressions,
            "refused_settings": list(program.refused_settings)}


def _module(module: Module) -> Json:
    return {
        "path": module.path,
        "bias": _hex(module.bias),
        "start": _hex(module.start),
        "end": _hex(module.end),
        "unloaded": module.unloaded,
        "build_id": module.build_id.hex(),
    }


def _summary(summary: Summary, elapsed_ns: int) -> Json:
    out: Json = summary.as_dict()
    seconds = elapsed_ns / 1e9
    out["kept_objects"] = summary.allocs - summary.frees
    out["kept_bytes"] = summary.bytes_allocated - summary.bytes_freed
    out["average_size"] = summary.bytes_allocated / summary.allocs if summary.allocs else 0.0
    out["elapsed_seconds"] = seconds
    # A snapshot taken in the first nanosecond has no meaningful rate; 0.0
    # keeps the field a number for consumers that do arithmetic on it.
    out["allocation_rate_bytes_per_second"] = summary.bytes_allocated / seconds if seconds else 0.0
    return out


def _bin(b: Bin) -> Json:
    return {
        "size": b.size,
        "label": f">{fmt.BIN_LARGE - 1}" if b.size == fmt.BIN_LARGE else str(b.size),
        "allocs": b.allocs,
        "frees": b.frees,
        "kept_objects": b.allocs - b.frees,
        "bytes": b.bytes,
        "bytes_freed": b.bytes_freed,
        "kept_bytes": b.bytes - b.bytes_freed,
        "temporaries": b.temporaries,
        "peak_blocks": b.peak_blocks,
        "peak_bytes": b.peak_bytes,
    }


def _node(node: Node) -> Json:
    return {"parent": node.parent if node.parent >= 0 else None, "addr": _hex(node.addr)}


def _path(path: CallPath, df: DataFile) -> Json:
    kept: ClassBytes = (
        path.bytes[0] - path.freed[0],
        path.bytes[1] - path.freed[1],
        path.bytes[2] - path.freed[2],
        path.bytes[3] - path.freed[3],
    )
    return {
        "node": path.node if path.node >= 0 else None,
        "addrs": [_hex(a) for a in tree.addresses(df, path.node)],
        "allocs": path.allocs,
        "frees": path.frees,
        "kept_objects": path.allocs - path.frees,
        "bytes": _by_class(path.bytes),
        "bytes_total": sum(path.bytes),
        "freed": _by_class(path.freed),
        "freed_total": sum(path.freed),
        "kept_bytes": _by_class(kept),
        "kept_bytes_total": sum(kept),
        "temporaries": path.temporaries,
        "peak_blocks": path.peak_blocks,
        "peak_bytes": path.peak_bytes,
    }


def datafile_to_json(df: DataFile) -> Json:
    return {
        "file": df.path,
        "header": _header(df.header),
        "program": _program(df.program),
        "modules": [_module(m) for m in df.modules],
        "summary": _summary(df.summary, df.header.elapsed_ns),
        "bins": [_bin(b) for b in df.bins],
        "nodes": [_node(n) for n in df.nodes],
        "paths": [_path(p, df) for p in df.paths],
        # The pool frames by index: a pool's objects' innermost address is
        # mprof(5)'s POOL_FRAME_BASE plus it.
        "pools": [{"creator": f"0x{frame.creator:x}", "name": frame.name} for frame in df.pools],
    }
