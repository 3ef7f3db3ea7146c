-- The reduced profile.  One database holds one or more data files (runs) of
-- a program, reduced together: figures are summed over the runs.
-- PRAGMA application_id says the file is an mprof profile (0x6D70726F,
-- "mpro"); PRAGMA user_version is the schema version: readers refuse any
-- other application and any other version.
-- Text from the program's world (paths, arguments, names) is stored as it
-- was: TEXT when it is UTF-8, else a BLOB of its bytes.  Addresses, biases
-- and offsets are unsigned 64-bit values stored as signed two's complement:
-- a negative v stands for v + 2^64.
PRAGMA application_id = 1836085871;
PRAGMA user_version = 15;

CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    data_file TEXT NOT NULL,         -- as given to the reducer
    pid INTEGER NOT NULL,
    ppid INTEGER NOT NULL,
    program TEXT NOT NULL,           -- executable path
    command_line TEXT NOT NULL,      -- arguments joined by spaces
    start_unix_ns INTEGER NOT NULL,
    elapsed_ns INTEGER NOT NULL,
    call_graph INTEGER NOT NULL,     -- 0: mprof- mode, no pairs recorded
    final INTEGER NOT NULL,          -- 1: written as the process ended or exec'd
    checkpoint INTEGER NOT NULL,     -- 1: rewritten while it ran; it wrote no final file (yet)
    running INTEGER NOT NULL,        -- 1: a checkpoint whose process still ran, on this machine, when reduced
    end_signal INTEGER NOT NULL,     -- the signal that ended the process, or 0
    forked INTEGER NOT NULL,
    stack_depth INTEGER NOT NULL,
    leak_depth INTEGER NOT NULL,
    lsan_suppressions TEXT NOT NULL, -- what the program's __lsan_default_suppressions returned, or empty
    attached INTEGER NOT NULL,       -- 1: recorded from mprof attach on, not from the process's start
    -- How the monitor classified the blocks live at the file's writing, as
    -- memcheck does (mprof(5)'s LEAK); all 0 when it did not.
    classified INTEGER NOT NULL,     -- 1: the leak kinds are known; 0: its blocks are never freed, no more
    leak_flags INTEGER NOT NULL,     -- 1: threads not stopped (stacks scanned whole, registers unread);
                                     -- 2: memory of unknown contents taken as roots
    threads_stopped INTEGER NOT NULL,
    threads_unstopped INTEGER NOT NULL,
    root_bytes_scanned INTEGER NOT NULL,
    block_bytes_scanned INTEGER NOT NULL,
    scan_ns INTEGER NOT NULL
);

CREATE TABLE modules (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    path TEXT NOT NULL,
    bias INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    build_id TEXT NOT NULL,          -- hex, empty when none
    unloaded INTEGER NOT NULL,
    PRIMARY KEY (run_id, start, path)
);

-- Whole-program figures: sums over the runs, except max_live_*, the
-- largest of any one run, and peak_ns and peak_allocs, that run's.  Names
-- as in mprof(5)'s SUMM section, and elapsed_ns, the longest run's time.
CREATE TABLE summary (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);

-- Each run's memory over time (mprof(5)'s TIME section): at most a few
-- thousand points however long the run.
CREATE TABLE timeline (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    ns INTEGER NOT NULL,             -- from the run's start
    live_bytes INTEGER NOT NULL,
    live_blocks INTEGER NOT NULL,
    resident_bytes INTEGER NOT NULL, -- the process's resident set
    mapped_bytes INTEGER NOT NULL,   -- the regions the program mapped itself (mmap, brk)
    PRIMARY KEY (run_id, ns)
);

-- Each run's own figures, as its data file's SUMM section has them: the
-- process table of a report of several processes.
CREATE TABLE run_figures (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (run_id, name)
);

-- Strongly connected components of the call graph with more than one
-- function, or one that calls itself: gprof's <cycle N>.
CREATE TABLE cycles (
    id INTEGER PRIMARY KEY,          -- N in <cycle N>
    self_bytes INTEGER NOT NULL,     -- allocated directly by the members
    total_bytes INTEGER NOT NULL,    -- by the members and their descendants, counted once
    called INTEGER NOT NULL,         -- calls into the cycle from outside
    internal_calls INTEGER NOT NULL  -- calls between members
);

-- Functions on allocation chains, inlined ones included, after frames
-- above main are dropped.
CREATE TABLE functions (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,              -- demangled, or module+0xoffset when unknown
    module TEXT NOT NULL,
    file TEXT NOT NULL,
    line INTEGER NOT NULL,
    cycle_id INTEGER REFERENCES cycles(id),
    self_calls INTEGER NOT NULL,     -- allocations it made directly
    self_s INTEGER NOT NULL,         -- bytes it allocated directly, by size class
    self_m INTEGER NOT NULL,
    self_l INTEGER NOT NULL,
    self_x INTEGER NOT NULL,
    kept_s INTEGER NOT NULL,         -- of those, bytes never freed
    kept_m INTEGER NOT NULL,
    kept_l INTEGER NOT NULL,
    kept_x INTEGER NOT NULL,
    kept_objects INTEGER NOT NULL,
    total_bytes INTEGER NOT NULL,    -- self + descendants (its cycle's for a member)
    called INTEGER NOT NULL,         -- calls on allocation chains from other functions
    recursive_calls INTEGER NOT NULL -- calls from itself or from its cycle
);
CREATE UNIQUE INDEX functions_identity ON functions(name, module);

-- A function's bytes as one figure each: the top direct allocators are
-- SELECT name, self_bytes FROM function_bytes ORDER BY self_bytes DESC.
CREATE VIEW function_bytes AS
SELECT id, name, module, self_calls,
       self_s + self_m + self_l + self_x AS self_bytes,
       kept_s + kept_m + kept_l + kept_x AS kept_bytes,
       kept_objects, total_bytes
FROM functions;

-- Caller/callee pairs between functions, bytes allocated over each.
CREATE TABLE edges (
    caller_id INTEGER NOT NULL REFERENCES functions(id),
    callee_id INTEGER NOT NULL REFERENCES functions(id),
    calls INTEGER NOT NULL,
    bytes_s INTEGER NOT NULL,
    bytes_m INTEGER NOT NULL,
    bytes_l INTEGER NOT NULL,
    bytes_x INTEGER NOT NULL,
    PRIMARY KEY (caller_id, callee_id)
);
CREATE INDEX edges_callee ON edges(callee_id);

-- Direct allocation sites: the call instructions that called the allocator.
CREATE TABLE sites (
    id INTEGER PRIMARY KEY,
    function_id INTEGER NOT NULL REFERENCES functions(id),
    module TEXT NOT NULL,
    offset INTEGER NOT NULL,         -- of the return address in its module
    file TEXT NOT NULL,
    line INTEGER NOT NULL,
    calls INTEGER NOT NULL,
    frees INTEGER NOT NULL,
    bytes_s INTEGER NOT NULL,
    bytes_m INTEGER NOT NULL,
    bytes_l INTEGER NOT NULL,
    bytes_x INTEGER NOT NULL,
    freed_s INTEGER NOT NULL,
    freed_m INTEGER NOT NULL,
    freed_l INTEGER NOT NULL,
    freed_x INTEGER NOT NULL,
    temporaries INTEGER NOT NULL,    -- blocks freed by their thread before it allocated again
    peak_blocks INTEGER NOT NULL,    -- blocks live at the peak (summary's max_live_bytes), of one process
    peak_bytes INTEGER NOT NULL
);

-- Allocation bins: sizes 0..1024, and 1025 for all larger ones.
CREATE TABLE bins (
    size INTEGER PRIMARY KEY,
    allocs INTEGER NOT NULL,
    frees INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    bytes_freed INTEGER NOT NULL,
    temporaries INTEGER NOT NULL,
    peak_blocks INTEGER NOT NULL,
    peak_bytes INTEGER NOT NULL,
    types TEXT NOT NULL              -- program types of this size, comma-separated
);

-- Partial call chains of the leak table, merged when they resolve to the
-- same path: a row per chain and leak kind, as memcheck's loss records.
CREATE TABLE leaks (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,              -- definitely lost, indirectly lost, possibly lost, still reachable;
                                     -- unknown: of runs not classified, never freed
    blocks INTEGER NOT NULL,         -- live when the files were written
    bytes INTEGER NOT NULL,
    runtime TEXT NOT NULL,           -- what in the C or C++ runtime keeps these blocks on purpose
                                     -- ("stdio buffer", ...), or empty: the program's own or lost
    -- The whole chain's figures, all kinds and the blocks freed, the same
    -- on each of its rows.
    chain_allocs INTEGER NOT NULL,
    chain_frees INTEGER NOT NULL,
    chain_bytes INTEGER NOT NULL,
    chain_bytes_freed INTEGER NOT NULL
);

CREATE TABLE leak_frames (
    leak_id INTEGER NOT NULL REFERENCES leaks(id),
    position INTEGER NOT NULL,       -- 0: the direct allocation site's function
    function_id INTEGER NOT NULL REFERENCES functions(id),
    file TEXT NOT NULL,              -- of the call site in this frame
    line INTEGER NOT NULL,
    PRIMARY KEY (leak_id, position)
);

-- The whole call paths of every allocation, as a tree of frames: a node is
-- a function called from its parent node's frame, making its own call at
-- file:line (the innermost: the allocation's).  Frames above main are
-- dropped, inlined functions are frames of their own.  Parents come before
-- their children.
-- This table and paths, a big program's hundreds of thousands of rows, are
-- STRICT: SQLite refuses a value of another type than a column's, so that
-- a report that reads them checks only their values' ranges.  Text of the
-- program's world, a BLOB where it is not UTF-8, is ANY there.
CREATE TABLE path_nodes (
    id INTEGER PRIMARY KEY,
    parent_id INTEGER REFERENCES path_nodes(id), -- NULL: an outermost frame
    function_id INTEGER NOT NULL REFERENCES functions(id),
    file ANY NOT NULL,               -- TEXT, or the BLOB of text that is not UTF-8
    line INTEGER NOT NULL,
    inlined INTEGER NOT NULL         -- 1: its code was inlined into its parent's, one machine frame with it
) STRICT;

-- The figures of the allocations made from each whole path, exact from
-- the program's entry down: each allocation in exactly one path.
CREATE TABLE paths (
    node_id INTEGER UNIQUE REFERENCES path_nodes(id), -- its innermost frame; NULL: no caller was found
    allocs INTEGER NOT NULL,
    frees INTEGER NOT NULL,
    bytes_s INTEGER NOT NULL,
    bytes_m INTEGER NOT NULL,
    bytes_l INTEGER NOT NULL,
    bytes_x INTEGER NOT NULL,
    freed_s INTEGER NOT NULL,
    freed_m INTEGER NOT NULL,
    freed_l INTEGER NOT NULL,
    freed_x INTEGER NOT NULL,
    temporaries INTEGER NOT NULL,
    peak_blocks INTEGER NOT NULL,
    peak_bytes INTEGER NOT NULL,
    definite_blocks INTEGER NOT NULL, -- of the blocks live when the files were written, by leak kind
    definite_bytes INTEGER NOT NULL,  -- (runs' classified, mprof(5)'s LEAK); 0 in runs not classified
    indirect_blocks INTEGER NOT NULL,
    indirect_bytes INTEGER NOT NULL,
    possible_blocks INTEGER NOT NULL,
    possible_bytes INTEGER NOT NULL,
    reachable_blocks INTEGER NOT NULL,
    reachable_bytes INTEGER NOT NULL,
    runtime TEXT NOT NULL,           -- as in leaks: what in the C or C++ runtime keeps these blocks on purpose, or empty
    -- The first node (the least id) whose path has this path's functions,
    -- outermost first: node_id itself unless the functions were called
    -- from other lines too.  The reports merge paths by it.  NULL with node_id.
    same_functions_id INTEGER REFERENCES path_nodes(id),
    -- The place of the path's function names, outermost first, among all
    -- paths' in sorted order (a path before the longer ones it starts);
    -- equal for paths whose names read the same, 0 for no node.  The
    -- reports order paths of equal figures by it.
    name_order INTEGER NOT NULL
) STRICT;

-- Replays of an allocation trace against real allocators (mprof replay
-- --db), one row per command; a database may hold replays alone.
CREATE TABLE replays (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL,            -- the trace's path as given, or the synthetic workload's parameters
    synthetic INTEGER NOT NULL,      -- 1: Gloger's random workload, no trace
    event_order TEXT NOT NULL,       -- threads: each thread's events on a thread; recorded: one order
    repeats INTEGER NOT NULL,        -- replays of each allocator; their figures are medians over these
    start_unix_ns INTEGER NOT NULL,  -- when the command ran
    events INTEGER NOT NULL,         -- the workload, as the trace holds it
    threads INTEGER NOT NULL,
    allocations INTEGER NOT NULL,
    frees INTEGER NOT NULL,
    reallocs INTEGER NOT NULL,
    bytes_allocated INTEGER NOT NULL,
    peak_live_bytes INTEGER NOT NULL,
    peak_live_blocks INTEGER NOT NULL,
    unmatched_frees INTEGER NOT NULL,
    duration_ns INTEGER NOT NULL,    -- from the first event to the last as recorded; 0: synthetic
    max_size INTEGER NOT NULL,       -- the largest block asked for
    live_digest INTEGER NOT NULL     -- FNV-1a of the live bytes after each event, in the recorded order
);

-- Each allocator of a replay: every figure the median over its repeats.
-- Ratios are REAL, NULL where there is nothing to divide by.
CREATE TABLE replay_allocators (
    replay_id INTEGER NOT NULL REFERENCES replays(id),
    position INTEGER NOT NULL,       -- its place in --allocators, from 0
    allocator TEXT NOT NULL,         -- glibc, jemalloc, tcmalloc, mimalloc
    library TEXT NOT NULL,           -- where its malloc came from, as the replayer found it
    median_round INTEGER NOT NULL,   -- the repeat whose footprint replay_samples holds, from 1
    wall_ns INTEGER NOT NULL,
    user_ns INTEGER NOT NULL,
    system_ns INTEGER NOT NULL,
    ns_per_malloc REAL,              -- less the do-nothing replay's, never below 0
    ns_per_realloc REAL,
    ns_per_free REAL,
    peak_resident_bytes INTEGER NOT NULL, -- less the replayer's own before the replay
    peak_mapped_bytes INTEGER NOT NULL,
    live_at_peak_bytes INTEGER NOT NULL,
    waste_at_peak REAL,              -- 1 - live_at_peak_bytes / peak_resident_bytes (Gloger)
    average_waste REAL,              -- the same, averaged over the samples (Gloger)
    heap_expansion REAL,             -- peak_resident_bytes / the replay's peak of live bytes (Detlefs et al.)
    PRIMARY KEY (replay_id, position)
);

-- The footprint over each allocator's median replay.
CREATE TABLE replay_samples (
    replay_id INTEGER NOT NULL,
    position INTEGER NOT NULL,       -- the allocator's, as in replay_allocators
    sample INTEGER NOT NULL,         -- from 0, in time order
    events INTEGER NOT NULL,         -- replayed so far
    live_bytes INTEGER NOT NULL,
    resident_bytes INTEGER NOT NULL, -- less the replayer's own before the replay
    mapped_bytes INTEGER NOT NULL,
    PRIMARY KEY (replay_id, position, sample),
    FOREIGN KEY (replay_id, position) REFERENCES replay_allocators(replay_id, position)
);
