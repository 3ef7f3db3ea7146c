/* The module types listing (see types.c). */

#ifndef MPROF_RESOLVE_TYPES_H
#define MPROF_RESOLVE_TYPES_H

#include <elfutils/libdw.h>

void print_types(Dwarf *dwarf);

#endif
