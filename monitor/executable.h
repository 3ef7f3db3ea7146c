/* The executable's own functions, exported or not: read from its file's
 * symbol tables (.symtab, else .dynsym), where dlsym sees only what it
 * exports. */
#ifndef MPROF_EXECUTABLE_H
#define MPROF_EXECUTABLE_H

#include <stdint.h>

/* The run-time address of the function the executable defines as name,
 * or 0. */
uintptr_t executable_function(const char *name);

#endif
