/* The leak suppressions a program gives LeakSanitizer by defining
 * __lsan_default_suppressions, kept for its data file (mprof(5), PROG), so
 * that mprof's leak reports honour them as LeakSanitizer would. */
#ifndef MPROF_LSAN_SUPPRESSIONS_H
#define MPROF_LSAN_SUPPRESSIONS_H

#include <stdint.h>

struct lsan_suppressions {
    const char *text; /* a copy of the program's string; NULL: it defines none */
    uint32_t size;
};

/* Finds the function in the executable's own symbol tables and calls it,
 * as LeakSanitizer does, once at start-up; the constructor calls it while
 * the process has one thread. */
struct lsan_suppressions lsan_suppressions_find(void);

#endif
