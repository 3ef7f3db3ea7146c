/* The leak records: distinct partial call chains (the innermost N return
 * addresses, the paper's "last five callers"), shared by all threads and
 * numbered densely so that a live block needs only 24 bits to name one. */
#ifndef MPROF_RECORDS_H
#define MPROF_RECORDS_H

#include <stdbool.h>
#include <stdint.h>

/* Chains past this many share the last id; their leaks are merged. */
#define RECORD_ID_LIMIT ((1u << 24) - 1)

struct leak_chain {
    uint64_t hash;
    uint32_t id;
    uintptr_t addrs[]; /* leak_depth entries, innermost first, 0-padded */
};

void records_init(unsigned leak_depth);
uint64_t records_hash(const uintptr_t *addrs);
/* The record for this chain, created on first use; NULL when out of memory. */
const struct leak_chain *records_intern(const uintptr_t *addrs, uint64_t hash);
/* NULL for an id not yet made. */
const struct leak_chain *records_by_id(uint32_t id);
bool records_same_chain(const struct leak_chain *chain, const uintptr_t *addrs);
/* Gives every address in [start, end) of every record made by this
 * process the tag bits (see retag.h), and rehashes.  Callers hold every
 * thread state's lock, which come before the registry's. */
void records_retag(uintptr_t start, uintptr_t end, uintptr_t tag_bits);
/* Ids below this were created before the last fork, by the parent. */
uint32_t records_first_own_id(void);

void records_fork_prepare(void);
void records_fork_parent(void);
/* The child starts numbering afresh above the parent's ids. */
void records_fork_child(void);

#endif
