/* The radix sort of radix.h. */
#include "radix.h"

struct keyed_pair *radix_sort_pairs(struct keyed_pair *items, struct keyed_pair *spare, size_t count)
{
    for (unsigned shift = 0; shift < 64 && count; shift += 8) {
        size_t starts[256] = {0};
        for (size_t i = 0; i < count; i++)
            starts[(items[i].key >> shift) & 255]++;
        if (starts[(items[0].key >> shift) & 255] == count)
            continue;
        size_t sum = 0;
        for (unsigned digit = 0; digit < 256; digit++) {
            size_t digit_count = starts[digit];
            starts[digit] = sum;
            sum += digit_count;
        }
        for (size_t i = 0; i < count; i++)
            spare[starts[(items[i].key >> shift) & 255]++] = items[i];
        struct keyed_pair *sorted = spare;
        spare = items;
        items = sorted;
    }
    return items;
}
