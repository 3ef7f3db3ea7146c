/* Routing a running process's calls to the monitor without LD_PRELOAD
 * (mprof attach): every loaded module calls a function of another module
 * through its global offset table, one slot per function, which the
 * dynamic loader filled; the slots of the functions named are pointed at
 * the monitor's, and pointed back as they were when it leaves. */
#ifndef MPROF_GOT_H
#define MPROF_GOT_H

#include <link.h>
#include <stdbool.h>
#include <stddef.h>

struct got_route {
    const char *name;  /* the function's symbol, as modules import it */
    void *replacement; /* the monitor's function of the same prototype */
};

/* Routes the slots of every loaded module that skip does not exclude, of
 * those modules loaded since the last call too, and remembers what each
 * held; false when a slot could not be made writable.  Callers serialise
 * the calls. */
bool got_route(const struct got_route *routes, size_t count, bool (*skip)(const struct dl_phdr_info *module));
/* Puts back what every routed slot held, in the modules still loaded, and
 * forgets them. */
void got_unroute(void);

#endif
