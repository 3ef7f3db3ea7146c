/* Attributes shared by every monitor file. */
#ifndef MPROF_COMPILER_H
#define MPROF_COMPILER_H

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define HIDDEN __attribute__((visibility("hidden")))
#define EXPORT __attribute__((visibility("default")))
#define CACHE_ALIGNED __attribute__((aligned(64)))

/* Every function that can be on the stack while the monitor records an
 * allocation lives in this section, so the unwinder can drop the monitor's
 * own frames by address range, whether libmprof is a shared library or
 * linked into the executable. */
#define MONITOR_TEXT __attribute__((section("mprof_text"), noinline))
#define MONITOR_TEXT_INLINE __attribute__((section("mprof_text")))

#endif
