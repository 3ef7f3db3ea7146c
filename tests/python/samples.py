"""Data files with known contents, shared by the reader, report and CLI tests."""

from __future__ import annotations

from datafile_builder import DataFileBuilder, ModuleSpec

MAIN_BUILD_ID = bytes(range(20))
PLUGIN_BUILD_ID = bytes.fromhex("deadbeef0102")

SUMMARY = [
    100,  # allocs
    60,  # frees
    5000,  # bytes_allocated
    3000,  # bytes_freed
    45,  # max_live_objects
    2600,  # max_live_bytes
] + [1000 + i for i in range(6, 39)]


def rich() -> DataFileBuilder:
    """A file with every section in use and values that are all distinct."""
    return DataFileBuilder(
        flags=0x1 | 0x2 | 0x4,
        stack_depth=32,
        leak_depth=4,
        pid=31337,
        ppid=31336,
        start_unix_ns=1_700_000_000_123_456_789,
        elapsed_ns=2_500_000_000,
        exe=b"/usr/bin/prog",
        cmdline=b"prog\0-v\0caf\xe9\0",
        lsan_suppressions=b"leak:libfoo.so\n# caf\xe9\n",
        refused_settings=b"MPROF_DEPTH=5000\0MPROF_BLOCKS=m\xe9p\0",
        modules=[
            ModuleSpec(0x555555554000, 0x555555554000, 0x55555555A000, 0, MAIN_BUILD_ID, b""),
            ModuleSpec(
                0x7F0000000000, 0x7F0000028000, 0x7F00001F0000, 0, b"\x11" * 20, b"/lib/libc.so.6"
            ),
            ModuleSpec(
                0x7F1000000000,
                0x7F1000001000,
                0x7F1000005000,
                1,  # unloaded
                PLUGIN_BUILD_ID,
                b"/opt/plugin.so",
            ),
            ModuleSpec(0x7F2000000000, 0x7F2000000000, 0x7F2000030000, 0, b"", b"/lib/ld.so"),
        ],
        summary=SUMMARY + [777, 888],  # two values a newer writer might add
        bins=[
            (0, 1, 1, 0, 0),
            (8, 10, 5, 80, 40, 3, 4, 32),  # 3 temporaries; 4 blocks of 32 bytes at the peak
            (1024, 2, 0, 2048, 0),
            (1025, 3, 1, 9000, 3000),
        ],
        # Two paths share main's caller and main; one is deeper than the
        # leak depth; one is the empty path; each path has a value after
        # the ones this mprof knows, as a newer writer might add.
        paths=[
            ((0x555555555123, 0x555555555200, 0x555555555300), 70, 40, (100, 200, 300, 400), (10, 20, 30, 40),
             7, 25, 800),  # 7 temporaries; 25 blocks of 800 bytes live at the peak
            ((0x7F0000030456, 0x555555555200, 0x555555555300), 30, 20, (1, 2, 3, 4), (1, 1, 1, 1)),
            ((1, 2, 3, 4, 5), 1, 0, (16, 0, 0, 0), (0, 0, 0, 0)),
            ((), 2, 2, (0, 8, 0, 0), (0, 8, 0, 0)),
        ],
        path_fields=14,
        timeline=[(1_000_000, 4096, 3, 1 << 22, 0), (3_000_000, 10_000, 9, 5 << 20, 8192)],
        path_extra=(999,),
        pools=[(0x555555555400, b"parser arena"), (0, b""), (0x555555555500, b"caf\xe9")],
    )
