"""What a machine's limit on each process's address space (RLIMIT_AS)
leaves out: some CI machines hold every process to 2 GiB, below what
Chromium and LeakSanitizer reserve as they start, and no process there can
raise it.  A test that needs one of them is skipped there, with the limit
and what it keeps out in the reason make check prints (-rs); anywhere
else, the tool failing to start fails the test."""

from __future__ import annotations

import resource

import pytest

# Seen with strace as each starts: Chromium's PartitionAlloc pools (32 GiB)
# and V8 cage (4 GiB); LeakSanitizer's allocator space (4 TiB at
# 0x600000000000).  Neither takes less for any flag.
CHROMIUM_RESERVES = 36 << 30
LEAKSANITIZER_RESERVES = 4 << 40
# AddressSanitizer's first reservation, the high part of its shadow (14
# TiB), seen as it fails under a 2 GiB limit; its allocator's comes after.
ADDRESSSANITIZER_RESERVES = 0xdfff0001000


def hard_limit() -> int | None:
    """The hard limit on a process's address space, when there is one: a
    process can lower it, never raise it past the hard one."""
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    return None if hard == resource.RLIM_INFINITY else hard


def skip_if_too_small(reserves: int, tool: str) -> None:
    """Skips the test when the hard limit is below what the tool reserves;
    returns when the tool's failure would be the test's failure."""
    limit = hard_limit()
    if limit is not None and limit < reserves:
        pytest.skip(f"{tool} cannot start on this machine: its hard address-space limit (RLIMIT_AS) is "
                    f"{limit >> 20} MiB, and {tool} reserves {reserves >> 30} GiB as it starts")
