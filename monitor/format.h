/* The mprof data file format, as specified in mprof(5).  Dependency-free so
 * that the writer, the tests and anyone else can include it alone.
 *
 * All integers are little-endian; NODE, PATH and TIME use LEB128 varints,
 * and NODE names addresses by their index in ADDR.  A file is a 64-byte header
 * followed by sections; each section is a 16-byte section header and its payload.  The
 * last section is MPROF_TAG_END, whose payload holds the CRC-32 of every byte
 * before the END section header.  With MPROF_FLAG_COMPRESSED, everything
 * after the header is one zlib stream (RFC 1950) of those sections, and the
 * CRC is of the bytes before they were deflated.
 *
 *   header:  magic[8] | u16 version | u16 header_size | u32 flags |
 *            u32 stack_depth | u32 leak_depth | u32 pid | u32 ppid |
 *            u64 start_unix_ns | u64 elapsed_ns | u32 section_count |
 *            u32 end_signal | u64 reserved
 *   section: u32 tag | u32 reserved | u64 payload_size | payload...
 */
#ifndef MPROF_FORMAT_H
#define MPROF_FORMAT_H

#define MPROF_MAGIC "MPROFDAT"
#define MPROF_MAGIC_SIZE 8
#define MPROF_FORMAT_VERSION 7
#define MPROF_HEADER_SIZE 64
#define MPROF_SECTION_HEADER_SIZE 16

/* header flags */
#define MPROF_FLAG_CALL_GRAPH 0x1u /* pairs were recorded (not mprof- mode) */
#define MPROF_FLAG_FINAL 0x2u      /* written as the process ended or exec'd */
#define MPROF_FLAG_FORKED 0x4u     /* the process is a fork child of a profiled process */
#define MPROF_FLAG_CHECKPOINT 0x8u /* rewritten while the process ran, in case it never ends cleanly */
#define MPROF_FLAG_COMPRESSED 0x10u /* the sections are one zlib stream */
#define MPROF_FLAG_ATTACHED 0x20u   /* recorded from mprof attach on: blocks allocated before are unknown */

/* Section tags: four ASCII characters read as a little-endian u32. */
#define MPROF_TAG(a, b, c, d) \
    ((unsigned)(a) | (unsigned)(b) << 8 | (unsigned)(c) << 16 | (unsigned)(d) << 24)
#define MPROF_TAG_PROGRAM MPROF_TAG('P', 'R', 'O', 'G')
#define MPROF_TAG_MODULES MPROF_TAG('M', 'O', 'D', 'S')
#define MPROF_TAG_SUMMARY MPROF_TAG('S', 'U', 'M', 'M')
#define MPROF_TAG_BINS MPROF_TAG('B', 'I', 'N', 'S')
#define MPROF_TAG_ADDRESSES MPROF_TAG('A', 'D', 'D', 'R')
#define MPROF_TAG_NODES MPROF_TAG('N', 'O', 'D', 'E')
#define MPROF_TAG_PATHS MPROF_TAG('P', 'A', 'T', 'H')
#define MPROF_TAG_TIMELINE MPROF_TAG('T', 'I', 'M', 'E')
#define MPROF_TAG_POOLS MPROF_TAG('P', 'O', 'O', 'L')
#define MPROF_TAG_LEAKS MPROF_TAG('L', 'E', 'A', 'K')
#define MPROF_TAG_END MPROF_TAG('E', 'N', 'D', ' ')

/* A pool's objects (libmprof(3)) are counted under their call path with one
 * more innermost frame at this address plus the pool frame's index in the
 * POOL section: never code, x86-64 user addresses being below it. */
#define MPROF_POOL_FRAME_BASE 0x800000000000ull
/* Memory the program maps itself is counted the same way, under these
 * frames: anonymous mmap and mremap, and brk and sbrk. */
#define MPROF_MMAP_FRAME (MPROF_POOL_FRAME_BASE + 0xffffffffull)
#define MPROF_BRK_FRAME (MPROF_POOL_FRAME_BASE + 0xfffffffeull)

/* LEAK, the leak kinds of the blocks live when the file was written, as
 * memcheck names them: each kind a pair of values, blocks and bytes, per
 * path, in this order.  Readers ignore values past those they know. */
enum mprof_leak_kind {
    MPROF_LEAK_DEFINITE,  /* no pointer to the block from a root or a live block */
    MPROF_LEAK_INDIRECT,  /* pointed to only from lost blocks */
    MPROF_LEAK_POSSIBLE,  /* reached only through pointers into its middle */
    MPROF_LEAK_REACHABLE, /* pointed to from a root, or from a reachable block */
    MPROF_LEAK_KIND_COUNT
};
#define MPROF_LEAK_FIELD_COUNT (2u * MPROF_LEAK_KIND_COUNT)
/* LEAK's flags: what the scan could not look at, and how it made up for it. */
#define MPROF_LEAK_THREADS_UNSTOPPED 0x1u /* threads it could not stop: their stacks and registers unread */
#define MPROF_LEAK_UNKNOWN_ROOTS 0x2u     /* memory of unknown contents (blocks from before an attach,
                                           * an allocator it cannot walk) taken as roots */

/* The paper's size classes: s 0-32, m 33-256, l 257-2048, x > 2048. */
#define MPROF_SIZE_CLASSES 4
#define MPROF_CLASS_S_MAX 32u
#define MPROF_CLASS_M_MAX 256u
#define MPROF_CLASS_L_MAX 2048u

/* Values per PATH entry after its node: allocs, frees, bytes s m l x,
 * freed s m l x, temporaries, blocks and bytes live at the peak.  Readers
 * ignore values past those they know. */
#define MPROF_PATH_FIELD_COUNT 13u

/* Allocation bins: one per size 0..1024, and bin 1025 for everything larger. */
#define MPROF_BIN_LARGE 1025u
#define MPROF_BIN_COUNT 1026u

/* The SUMMARY section is a u64 count followed by that many u64 values, in
 * this order.  Readers ignore values past those they know; writers never
 * reorder them. */
enum mprof_summary_field {
    MPROF_SUM_ALLOCS,           /* blocks allocated, realloc's new blocks included */
    MPROF_SUM_FREES,            /* tracked blocks freed, realloc's old blocks included */
    MPROF_SUM_BYTES_ALLOCATED,
    MPROF_SUM_BYTES_FREED,
    MPROF_SUM_MAX_LIVE_OBJECTS,
    MPROF_SUM_MAX_LIVE_BYTES,
    MPROF_SUM_MALLOC_CALLS,
    MPROF_SUM_CALLOC_CALLS,
    MPROF_SUM_REALLOC_CALLS,    /* realloc and reallocarray */
    MPROF_SUM_MEMALIGN_CALLS,   /* posix_memalign, aligned_alloc, memalign, valloc, pvalloc */
    MPROF_SUM_NEW_CALLS,        /* every operator new and new[] */
    MPROF_SUM_FREE_CALLS,       /* free(), NULL included */
    MPROF_SUM_DELETE_CALLS,     /* every operator delete and delete[], NULL included */
    MPROF_SUM_FREE_NULL,        /* free or delete of NULL */
    MPROF_SUM_UNKNOWN_FREES,    /* free, delete or realloc of a pointer never seen */
    MPROF_SUM_EARLY_ALLOCS,     /* served before the monitor was ready */
    MPROF_SUM_EARLY_FREES,
    MPROF_SUM_UNTRACKED_ALLOCS, /* made while the monitor was busy on the same thread */
    MPROF_SUM_FAILED_ALLOCS,    /* calls that returned NULL */
    MPROF_SUM_INHERITED_FREES,  /* blocks freed in a fork child that its parent allocated */
    MPROF_SUM_TRUNCATED_CHAINS, /* call chains deeper than stack_depth */
    MPROF_SUM_MONITOR_BYTES,    /* memory the monitor has mapped for itself */
    MPROF_SUM_TEMPORARY_ALLOCS, /* blocks freed by their thread before it allocated again */
    MPROF_SUM_PEAK_NS,          /* when the live bytes reached max_live_bytes, since the start */
    MPROF_SUM_PEAK_ALLOCS,      /* allocations made up to that moment, that one included */
    MPROF_SUM_POOL_ALLOC_CALLS, /* objects a pool allocated or reallocated (libmprof(3)) */
    MPROF_SUM_POOL_FREE_CALLS,  /* objects a pool freed one by one */
    MPROF_SUM_POOL_RESETS,      /* pools reset or destroyed, their objects freed at once */
    MPROF_SUM_BACKING_BLOCKS,   /* pools' backing blocks: allocated, and in no figure above */
    MPROF_SUM_BACKING_BYTES,
    MPROF_SUM_BACKING_FREES,
    MPROF_SUM_BACKING_BYTES_FREED,
    MPROF_SUM_MMAP_CALLS,       /* mmap and mmap64 calls that mapped anonymous memory */
    MPROF_SUM_MUNMAP_CALLS,     /* munmap calls that unmapped some of it */
    MPROF_SUM_MREMAP_CALLS,     /* mremap calls of it */
    MPROF_SUM_BRK_CALLS,        /* brk and sbrk calls that moved the break */
    MPROF_SUM_MAPPED_BYTES,     /* bytes mapped by those calls */
    MPROF_SUM_UNMAPPED_BYTES,   /* bytes unmapped by them */
    MPROF_SUM_MAPPED_SPLITS,    /* regions left of one partly unmapped or remapped, counted anew */
    MPROF_SUM_FIELD_COUNT
};

#endif
