/* glibc's execl family calls its internal execve directly, not through the
 * symbol a wrapper of execve replaces, so the preloaded monitor (preload.c)
 * and the attached one (attach.c) wrap it too: each gathers its variable
 * arguments into an array with this macro and goes through its own execv,
 * execvp or execve. */
#ifndef MPROF_EXEC_ARGUMENTS_H
#define MPROF_EXEC_ARGUMENTS_H

#include <stdarg.h>
#include <stddef.h>

#define COLLECT_ARGUMENTS(first, arguments, after)            \
    size_t count_ = 1;                                        \
    va_list pieces_;                                          \
    va_start(pieces_, first);                                 \
    while (va_arg(pieces_, const char *))                     \
        count_++;                                             \
    va_end(pieces_);                                          \
    char *arguments[count_ + 1];                              \
    arguments[0] = (char *)(first);                           \
    va_start(pieces_, first);                                 \
    for (size_t i_ = 1; i_ <= count_; i_++)                   \
        arguments[i_] = va_arg(pieces_, char *);              \
    after;                                                    \
    va_end(pieces_)

#endif
