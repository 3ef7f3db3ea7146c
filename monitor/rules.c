/* The shared cache of frame rules (see rules.h). */
#include "rules.h"

#include "arena.h"
#include "lock.h"
#include "modules.h"

#define INITIAL_BITS 12

_Atomic(struct rule_table *) rules_table;
atomic_uint rules_generation;

/* Serialises the writers of rules_table, its entries and rules_generation.
 * Replaced tables are never unmapped: a walk in another thread may still be
 * reading one.  They add up to less than the current one. */
static spinlock_t writers = SPINLOCK_INIT;

static struct rule_table *new_table(unsigned bits)
{
    struct rule_table *table =
        region_map(sizeof(struct rule_table) + (sizeof(struct rule_entry) << bits));
    if (table)
        table->bits = bits;
    return table;
}

static void put(struct rule_table *table, uintptr_t address, frame_rule rule)
{
    uint64_t mask = (UINT64_C(1) << table->bits) - 1;
    for (uint64_t index = rules_home(table, address);; index = (index + 1) & mask) {
        struct rule_entry *entry = &table->entries[index];
        uintptr_t key = atomic_load_explicit(&entry->address, memory_order_relaxed);
        if (key == address) {
            atomic_store_explicit(&entry->rule, rule, memory_order_relaxed);
            return;
        }
        if (!key) {
            atomic_store_explicit(&entry->rule, rule, memory_order_relaxed);
            atomic_store_explicit(&entry->address, address, memory_order_release);
            table->used++;
            return;
        }
    }
}

/* A table twice the size with the current rules of the old one. */
static struct rule_table *grown(struct rule_table *old, unsigned generation)
{
    struct rule_table *table = new_table(old ? old->bits + 1 : INITIAL_BITS);
    if (table && old) {
        for (uint64_t i = 0; i < (UINT64_C(1) << old->bits); i++) {
            uintptr_t address = atomic_load_explicit(&old->entries[i].address, memory_order_relaxed);
            frame_rule rule = atomic_load_explicit(&old->entries[i].rule, memory_order_relaxed);
            if (address && rule_generation(rule) == generation)
                put(table, address, rule);
        }
    }
    return table;
}

MONITOR_TEXT frame_rule rules_fill(uintptr_t address)
{
    /* The first sight of this address since the last dlclose: new code may
     * be where unloaded code was. */
    if (unlikely(atomic_load_explicit(&modules_watched, memory_order_relaxed)))
        modules_reused(address);
    /* Read before the lock: parsing .eh_frame is the slow part. */
    frame_rule rule = cfi_rule_at(address);
    spin_lock(&writers);
    unsigned generation = atomic_load_explicit(&rules_generation, memory_order_relaxed);
    rule = rule_with_generation(rule, generation);
    struct rule_table *table = atomic_load_explicit(&rules_table, memory_order_relaxed);
    if (!table || (table->used + 1) * 2 > (UINT64_C(1) << table->bits)) {
        struct rule_table *bigger = grown(table, generation);
        if (bigger) {
            atomic_store_explicit(&rules_table, bigger, memory_order_release);
            table = bigger;
        }
    }
    if (table && (table->used + 1) * 2 <= (UINT64_C(1) << table->bits))
        put(table, address, rule);
    spin_unlock(&writers);
    return rule;
}

void rules_forget(void)
{
    spin_lock(&writers);
    unsigned generation = (atomic_load_explicit(&rules_generation, memory_order_relaxed) + 1) &
                          RULE_GENERATION_MASK;
    /* A wrapped generation would make rules cached 4096 dlcloses ago look
     * current: start over from an empty table instead. */
    if (generation == 0)
        atomic_store_explicit(&rules_table, NULL, memory_order_release);
    atomic_store_explicit(&rules_generation, generation, memory_order_release);
    spin_unlock(&writers);
}

void rules_fork_prepare(void)
{
    spin_lock(&writers);
}

void rules_fork_parent(void)
{
    spin_unlock(&writers);
}

void rules_fork_child(void)
{
    spin_reset(&writers);
}
