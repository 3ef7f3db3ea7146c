"""What each table and column means, shared by the text and HTML reports."""

from __future__ import annotations

LEAKS = """\
Memory leak table: partial call paths (the last callers before the
allocation, outermost first) whose blocks were allocated and never freed.
  objects  blocks still allocated at exit (or at the snapshot or checkpoint)
  bytes    their bytes, and (%) their share of all bytes kept
  path     callers, outermost first; "..." when the path continues above;
           [4 std::] stands for four library frames, folded (--wide)"""
# The heading when the monitor classified the blocks: the table lists the
# kinds asked for, the lost by default.
LEAKS_CLASSIFIED = LEAKS.replace(
    "whose blocks were allocated and never freed.",
    "whose blocks were never freed, of\nthe kinds --leak-kinds lists: definitely and indirectly lost by default.")
# The kind column, when the monitor classified the blocks at exit.
LEAK_KINDS = """  kind     as memcheck says: definitely lost (nothing points to the block),
           indirectly lost (only lost blocks do), possibly lost (only
           pointers into its middle), still reachable (a root or a reachable
           block points to it); unknown: of a process not classified"""

BINS = """\
Allocation bin table: blocks by size, 0 to 1024 bytes, and one bin above.
  allocs   blocks allocated;  bytes, and (%) their share of all bytes
  frees    blocks freed;  kept, and (%) bytes never freed
  types    program types of exactly this size"""

DIRECT = """\
Direct allocation table: functions that called the allocator themselves.
  % mem    share of all bytes allocated;  bytes  allocated
  s m l x  % of all bytes allocated, by size class: s 0-32, m 33-256,
           l 257-2048, x > 2048 (blank: less than 1%)
  kept     bytes never freed, and % of all bytes kept, by size class
  calls    allocations made"""

GRAPH = """\
Allocation call graph: one entry per function on an allocation chain,
sorted by self+desc.  Callers above the entry's line, callees below.
  entry line  self+desc  % of all bytes allocated by the function and
                         its descendants (its cycle's, for a member)
              self       bytes it allocated directly, and their (%)
              s m l x    % of its own bytes in each size class
              called     calls on allocation chains, + recursive calls
  callers     self       bytes allocated on behalf of this caller
              s m l x    % of those bytes in each size class
              frac       % of all bytes requested of the entry, by class
              called     calls from this caller / all calls of the entry
  callees     self       bytes this callee allocated for the entry
              frac       % of the entry's self+desc bytes, by class
              called     calls of the callee from the entry / all its calls"""

PEAK = """\
Peak table: what held the memory when the live bytes were at their highest,
by whole call path (exact: every path's figures at that very moment).
  blocks   blocks of the path live at the peak
  bytes    their bytes, and (%) their share of the peak
  path     the whole call path, outermost first; [4 std::] stands for
           four library frames, folded (--wide shows them)"""

TEMPORARIES = """\
Temporary allocations: blocks freed by the thread that allocated them
before it allocated again (heaptrack's definition), by whole call path:
they cost time, not memory; a buffer allocated and freed in a loop.
  count    temporary allocations of the path, and (%) their share of all"""
