/* The functions the monitor wraps, as the next object in lookup order
 * defines them (normally libc's and libstdc++'s). */
#ifndef MPROF_REAL_H
#define MPROF_REAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct real_functions {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);
    int (*execve)(const char *, char *const[], char *const[]);
    int (*execvpe)(const char *, char *const[], char *const[]);
    int (*fexecve)(int, char *const[], char *const[]);
    void (*exit_now)(int) __attribute__((noreturn)); /* _exit */
    int (*dlclose)(void *);
    void *(*dlopen)(const char *, int); /* attached: the routed dlopen's (attach.c) */
    int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    /* The memory the program maps itself (mapped.c). */
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    int (*brk)(void *);
    void *(*sbrk)(intptr_t);
    /* libstdc++'s, NULL in a program without it. */
    void *(*new_nothrow)(size_t, const void *);
    void *(*new_array_nothrow)(size_t, const void *);
    void *(*new_aligned_nothrow)(size_t, size_t, const void *);
    void *(*new_array_aligned_nothrow)(size_t, size_t, const void *);
    void (*(*get_new_handler)(void))(void);
    void (*throw_bad_alloc)(void) __attribute__((noreturn));
};

/* Filled by real_functions_resolve, once, before the monitor turns active. */
extern struct real_functions real;

/* False when the allocator cannot be found, which leaves the monitor off.
 * attached: in a process that loaded the monitor with dlopen (mprof
 * attach), whose own functions are the real ones. */
int real_functions_resolve(bool attached);

/* Whether the functions found are glibc's own allocator, whose blocks
 * can carry a header (header.h). */
bool real_allocator_is_glibc(void);

/* Memory for calls made before the real allocator is known (dlsym's own). */
void *early_alloc(size_t size, size_t alignment);
int is_early(const void *block);
size_t early_size(const void *block);

#endif
