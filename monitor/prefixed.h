/* A second allocator's prefixed entry points (je_malloc, tc_malloc,
 * mi_malloc...), counted with the malloc family: see prefixed.c. */
#ifndef MPROF_PREFIXED_H
#define MPROF_PREFIXED_H

enum prefixed_outcome {
    PREFIXED_ROUTED,        /* every module's calls to it reach the monitor */
    PREFIXED_ABSENT,        /* no module defines prefix + malloc and free */
    PREFIXED_IN_EXECUTABLE, /* linked into the executable: its calls cannot be routed */
};

/* Routes every loaded module's calls to prefix + malloc, calloc, realloc,
 * free, posix_memalign, aligned_alloc, memalign and valloc (those the
 * allocator has) to the monitor; called once, as the monitor starts. */
enum prefixed_outcome prefixed_route(const char *prefix);

#endif
