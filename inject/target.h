/* Where the dynamic loader's functions are in the process to be called
 * into: at the same offsets in its C library as in this program's, which
 * must be the same file. */
#ifndef MPROF_INJECT_TARGET_H
#define MPROF_INJECT_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct loader {
    uint64_t dlopen, dlsym, dlerror; /* in the process's address space */
};

/* false, with why, when the process does not have this program's C
 * library mapped (a static program, another distribution's container). */
bool find_loader(pid_t pid, struct loader *loader, char *why, size_t why_size);

#endif
