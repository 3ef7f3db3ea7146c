/* An open-addressing index of entry numbers whose keys live elsewhere: the
 * caller hashes a key and says whether an entry holds it.  Each slot keeps
 * its entry's hash, so that the index can grow without the keys. */
#ifndef MPROF_REDUCE_INDEX_H
#define MPROF_REDUCE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Eight bytes a slot: an index of millions of entries (a big tree's
 * nodes) is the reducer's largest block. */
struct index_slot {
    uint32_t hash;  /* the key's hash, its low 32 bits: the slot's place comes from them */
    uint32_t entry; /* entry number + 1; 0: empty */
};

struct entry_index {
    struct index_slot *slots;
    size_t mask;
    size_t used;
};

static inline uint64_t mix(uint64_t h)
{
    /* The finalizer of MurmurHash3: every input bit reaches every output bit. */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

bool entry_index_init(struct entry_index *index);
void entry_index_free(struct entry_index *index);
/* Adds entry at the empty slot a find ended at; false when memory ran out. */
bool entry_index_add(struct entry_index *index, size_t slot, uint64_t hash, uint64_t entry);

/* Sets slot_out to the slot of the entry whose hash is hash and for which
 * `same` (an expression of `candidate`) holds, or to the empty slot where it
 * would go; found_out says which. */
#define ENTRY_INDEX_FIND(index, key_hash, candidate, same, slot_out, found_out) \
    do {                                                                    \
        size_t slot_ = (size_t)(uint32_t)(key_hash) & (index)->mask;        \
        (found_out) = false;                                                \
        while ((index)->slots[slot_].entry) {                               \
            if ((index)->slots[slot_].hash == (uint32_t)(key_hash)) {       \
                uint64_t candidate = (index)->slots[slot_].entry - 1;       \
                if (same) {                                                 \
                    (found_out) = true;                                     \
                    break;                                                  \
                }                                                           \
            }                                                               \
            slot_ = (slot_ + 1) & (index)->mask;                            \
        }                                                                   \
        (slot_out) = slot_;                                                 \
    } while (0)

#define ENTRY_INDEX_AT(index, slot) ((index)->slots[slot].entry - 1)

#endif
