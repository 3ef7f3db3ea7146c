/* Two loads of code at the same addresses, told apart.  When code is found
 * where an unloaded module was, every address of that module already in the
 * aggregates gets a tag in its top 16 bits (x86-64 user addresses are below
 * 2^47), so that later counts of the new code, at the same raw addresses,
 * never merge with them; the data file lists the unloaded module at the
 * same tagged addresses, so each resolves in its own file. */
#ifndef MPROF_RETAG_H
#define MPROF_RETAG_H

#include <stdint.h>

#define RETAG_SHIFT 48
#define RETAG_MAX 0x7fffu

/* Tags the addresses in [start, end) with tag (1 to RETAG_MAX), under every
 * thread state's lock and the records' registry lock. */
void retag_range(uintptr_t start, uintptr_t end, unsigned tag);

#endif
