/* Where things are in the process to be called into: the dynamic loader's
 * dlopen and the C library's signal return trampoline at the same offsets
 * in its C library as in this program's, which must be the same file; and
 * whether a library is mapped there. */
#ifndef MPROF_INJECT_TARGET_H
#define MPROF_INJECT_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct loader {
    /* In the process's address space. */
    uint64_t dlopen;
    /* The C library's sa_restorer (glibc's __restore_rt: the rt_sigreturn
     * system call), and its code as this program maps it, to check the
     * process's against. */
    uint64_t restorer;
    unsigned char restorer_code[16];
};

/* false, with why, when the process does not have this program's C
 * library mapped (a static program, another distribution's container). */
bool find_loader(pid_t pid, struct loader *loader, char *why, size_t why_size);
/* The start of the process's mapping of the file at offset 0; 0 when it
 * has none.  A file that is gone is matched by the name the memory map
 * gives it. */
uint64_t library_mapped_at(pid_t pid, const char *path);
/* 0 when this program may read the process's memory map, or why not, as
 * errno (EACCES: another user's process, ENOENT: no such process). */
int memory_map_error(pid_t pid);

#endif
