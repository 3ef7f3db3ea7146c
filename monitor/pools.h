/* The program's own allocators (libmprof(3)): pools whose objects it
 * announces one by one, each counted as a malloc'ed block is, under its
 * call path with one more frame, the pool's (format.h's pool frames); and
 * the backing blocks the pools carve them from, kept out of every figure. */
#ifndef MPROF_POOLS_H
#define MPROF_POOLS_H

#include <stdbool.h>
#include <stdint.h>

#include "block_map.h"

/* The pool frames' ids, each a (name, creator) pair, for the writer: how
 * many there are (they are never removed), and each one's creator (the
 * return address of the call that created the first pool of it, 0 for the
 * pool of malloc-like blocks) and name (NUL-terminated, empty when none
 * was given). */
uint32_t pools_frame_count(void);
void pools_frame(uint32_t id, uintptr_t *creator, const char **name);

/* Visits every live object of every pool, as block_map_each visits the
 * map's blocks (a piece of a pool of backing has the backing record). */
void pools_each_object(bool locking, block_visitor *visit, void *context);

void pools_fork_prepare(void);
void pools_fork_parent(void);
void pools_fork_child(void);

#endif
