/* The frame rules already read, by code address, shared by all threads:
 * walks read it without a lock, and a rule is read from .eh_frame once per
 * address until dlclose makes every cached rule stale. */
#ifndef MPROF_RULES_H
#define MPROF_RULES_H

#include <stdatomic.h>
#include <stdint.h>

#include "cfi.h"
#include "compiler.h"

struct rule_entry {
    atomic_uintptr_t address; /* 0: empty; set once, after rule */
    _Atomic frame_rule rule;  /* may be refreshed when its generation is stale */
};

struct rule_table {
    unsigned bits;
    uint64_t used; /* guarded by the writers' lock in rules.c */
    struct rule_entry entries[];
};

/* The table walks use, and the generation its rules must carry; written
 * only by rules.c under its lock, read by every walk. */
extern _Atomic(struct rule_table *) rules_table;
extern atomic_uint rules_generation;

static inline uint64_t rules_home(const struct rule_table *table, uintptr_t address)
{
    return (address * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - table->bits);
}

/* Reads, caches and returns the rule at address. */
frame_rule rules_fill(uintptr_t address);

/* The rule at address: the cached one when it is current. */
static inline frame_rule rules_at(const struct rule_table *table, unsigned generation,
                                  uintptr_t address)
{
    if (likely(table)) {
        uint64_t mask = (UINT64_C(1) << table->bits) - 1;
        for (uint64_t index = rules_home(table, address);; index = (index + 1) & mask) {
            const struct rule_entry *entry = &table->entries[index];
            uintptr_t key = atomic_load_explicit(&entry->address, memory_order_acquire);
            if (key == address) {
                frame_rule rule = atomic_load_explicit(&entry->rule, memory_order_relaxed);
                if (likely(rule_generation(rule) == generation))
                    return rule;
                break;
            }
            if (!key)
                break;
        }
    }
    return rules_fill(address);
}

/* Code was unmapped: no cached rule may be used again. */
void rules_forget(void);

void rules_fork_prepare(void);
void rules_fork_parent(void);
void rules_fork_child(void);

#endif
