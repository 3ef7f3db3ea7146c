/* What mprof-inject asks its helper library (helper.c) to do inside the
 * process, and what the helper answers there: the layout both sides share.
 * The answer goes through memory, not a return value, because the thread
 * returns from the call through a signal frame that restores every
 * register (see inject.c). */
#ifndef MPROF_INJECT_REQUEST_H
#define MPROF_INJECT_REQUEST_H

#include <stdint.h>

/* The helper's function: void mprof_inject_run(struct inject_request *). */
#define INJECT_ENTRY "mprof_inject_run"

enum inject_outcome {
    INJECT_PENDING = -1, /* as mprof-inject writes it: the helper never ran */
    INJECT_DONE = 0,
    INJECT_NO_LIBRARY = 1,
    INJECT_NO_FUNCTION = 2,
};

struct inject_request {
    /* NUL-terminated strings in the process's memory. */
    uint64_t library, function, argument;
    int32_t only_loaded; /* dlopen's RTLD_NOLOAD: the library must be loaded already */
    int32_t outcome;     /* enum inject_outcome */
    int64_t result;      /* FUNCTION(ARGUMENT)'s int */
    char message[400];   /* dlerror's words when the library or function is missing */
};

#endif
