/* Run-time options, read once from the environment (see mprof(1)). */
#ifndef MPROF_OPTIONS_H
#define MPROF_OPTIONS_H

#include <stdbool.h>

#define MPROF_MAX_STACK_DEPTH 1024u
#define MPROF_PATH_MAX 4096
/* Room for every setting refused, each value cut to MPROF_REFUSED_VALUE_MAX. */
#define MPROF_REFUSED_VALUE_MAX 64u
#define MPROF_REFUSED_MAX 1024u

struct options {
    /* MPROF_OUTPUT, made absolute against the working directory at start,
     * so that a program that changes directory still writes there;
     * mprof.out.%p there by default. */
    char output[MPROF_PATH_MAX];
    /* MPROF_TRACE: where each process writes its trace (trace.h), a name
     * pattern like MPROF_OUTPUT's, made absolute; empty: no trace. */
    char trace[MPROF_PATH_MAX];
    char run_dir[MPROF_PATH_MAX]; /* MPROF_RUN_DIR: where mprof run keeps its record, or empty */
    unsigned stack_depth;        /* MPROF_DEPTH: return addresses kept per allocation */
    unsigned leak_depth;         /* MPROF_LEAK_DEPTH: callers in a leak chain */
    bool call_graph;             /* MPROF_CALL_GRAPH: false is the paper's mprof- mode */
    bool follow_children;        /* MPROF_FOLLOW: profile fork children and exec'd programs */
    bool verbose;                /* MPROF_VERBOSE: a line on stderr for each file written */
    int dump_signal;             /* MPROF_DUMP_SIGNAL: 0, or the signal that writes a snapshot */
    bool cached_rules;           /* MPROF_UNWINDER=rules (default) or libunwind */
    bool block_headers;          /* MPROF_BLOCKS=headers (default) or map: see header.h */
    bool leak_check;             /* MPROF_LEAK_CHECK: classify the blocks left at the end (leak_scan.h) */
    /* MPROF_ALLOCATOR_PREFIX: the prefix of a second allocator's entry
     * points (je_ for je_malloc...), letters, digits and _; empty: none. */
    char allocator_prefix[32];
    /* MPROF_CHECKPOINT_GROWTH, in thousandths: rewrite the file when live
     * bytes reach this much of the last checkpoint's; 0 turns it off. */
    unsigned checkpoint_growth_permille;
    /* MPROF_CHECKPOINT_INTERVAL, in milliseconds; 0 turns it off. */
    unsigned checkpoint_interval_ms;
    /* The settings it did not accept, "NAME=VALUE" each ended by a NUL,
     * for the data file's PROG section: the monitor never writes into the
     * program's stderr, so the report says them. */
    char refused[MPROF_REFUSED_MAX];
    unsigned refused_size;
};

/* The defaults, as an unset environment gives them (mprof attach's). */
void options_default(struct options *options);
/* Fills options from the environment; a value it cannot use keeps the
 * default and is noted in refused. */
void options_read(struct options *options);
/* Notes NAME=VALUE in options->refused, the value cut short if long;
 * settings past the room left are dropped whole. */
void options_refuse(struct options *options, const char *name, const char *value);

#endif
