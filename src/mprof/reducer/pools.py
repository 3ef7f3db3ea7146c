"""The pool frames of a file's call paths (libmprof(3)): the innermost frame
of a pool's objects, named after the pool, and of the memory the program
maps itself, [mmap] and [brk]."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from . import format as fmt
from .records import PoolFrame
from .symbolize import Frame

# The module the reports show pool frames in.
POOL_MODULE = "[pools]"
# The frames of the memory the program maps itself.
MAPPED_FRAMES = {fmt.MMAP_FRAME: "[mmap]", fmt.BRK_FRAME: "[brk]"}


def is_pool_frame(address: int) -> bool:
    return fmt.POOL_FRAME_BASE <= address < 2 * fmt.POOL_FRAME_BASE


def pool_name(frame: PoolFrame, creators: dict[int, list[Frame]]) -> str:
    """[pool NAME], or for a pool created with no name [pool from F], F the
    function that created it; [malloc-like blocks] for the blocks announced
    with no pool."""
    if frame.name:
        return f"[pool {frame.name}]"  # escaped where it is shown, as every name is
    if not frame.creator:
        return "[malloc-like blocks]"
    created_in = creators.get(frame.creator)
    return f"[pool from {created_in[0].function}]" if created_in else f"[pool from {frame.creator:#x}]"


def resolve_all(addresses: Iterable[int], pools: Sequence[PoolFrame],
                resolve: Callable[[list[int]], dict[int, list[Frame]]]) -> dict[int, list[Frame]]:
    """The frames of every address of a file's paths: code's by resolve,
    the pool frames' by their pools."""
    code: list[int] = []
    pool_addresses: list[int] = []
    for address in addresses:
        (pool_addresses if is_pool_frame(address) else code).append(address)
    frames = resolve(code)
    frames.update(pool_frames(pools, pool_addresses, resolve))
    return frames


def pool_frames(pools: Sequence[PoolFrame], addresses: Sequence[int],
                resolve: Callable[[list[int]], dict[int, list[Frame]]]) -> dict[int, list[Frame]]:
    """The frame of each pool frame address; resolve names the creators'
    functions.  An index past the file's POOL section (a damaged file) is
    named by its number."""
    wanted = [frame.creator for frame in pools if frame.creator and not frame.name]
    creators = resolve(wanted) if wanted else {}
    frames: dict[int, list[Frame]] = {}
    for address in addresses:
        index = address - fmt.POOL_FRAME_BASE
        if address in MAPPED_FRAMES:
            name = MAPPED_FRAMES[address]
        else:
            name = pool_name(pools[index], creators) if index < len(pools) else f"[pool {index}]"
        frames[address] = [Frame(name, "", 0, POOL_MODULE, index, False)]
    return frames
