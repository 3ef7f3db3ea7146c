/* Hashing of addresses.  A bare multiply maps evenly spaced addresses (a
 * run of equal-sized blocks) to an evenly spaced lattice of slots, which
 * linear probing fills into long runs: 15 probes per insert on widgets
 * instead of 3.  The xor-shifts of murmur3's finaliser break the lattice. */
#ifndef MPROF_HASH_H
#define MPROF_HASH_H

#include <stdint.h>

static inline uint64_t mix64(uint64_t value)
{
    value ^= value >> 33;
    value *= UINT64_C(0xFF51AFD7ED558CCD);
    value ^= value >> 33;
    value *= UINT64_C(0xC4CEB9FE1A85EC53);
    value ^= value >> 33;
    return value;
}

/* Mixes a word into a running hash. */
static inline uint64_t hash_words(uint64_t seed, uint64_t word)
{
    return mix64(seed ^ (word + UINT64_C(0x9E3779B97F4A7C15)));
}

/* Folds a word into a running value with one multiply: for hashing several
 * words, finished by one mix64, instead of a mix64 per word. */
static inline uint64_t fold_word(uint64_t running, uint64_t word)
{
    return (running ^ word) * UINT64_C(0x9E3779B97F4A7C15);
}

#endif
