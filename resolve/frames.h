/* Logical frames of a return address from DWARF (see frames.c), and the
 * DWARF naming rules the types listing shares with it. */

#ifndef MPROF_RESOLVE_FRAMES_H
#define MPROF_RESOLVE_FRAMES_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdint.h>

#include "modules.h"
#include "text.h"

/* Bounds recursion over DIE trees, so corrupt or hostile DWARF nesting
 * cannot exhaust the stack.  Real programs nest far less. */
enum { MAX_DIE_DEPTH = 256 };

/* Appends the "frames" and "frame" lines answering one return address. */
void describe_address(struct resolver *resolver, uint64_t address, struct text *out);

/* Frees a struct unit_index, the values of struct module's units map. */
void unit_index_free(void *index);

/* Shared with types.c, so that types are qualified as functions are. */
bool nests_names(Dwarf_Die *unit_die);
const char *anonymous_scope_name(int tag);
const char *attribute_string(Dwarf_Die *die, unsigned int name);
Dwarf_Die declaring_die(Dwarf_Die *entity);

#endif
