/* Arrays that grow as entries come, for counts a payload does not promise. */
#ifndef MPROF_REDUCE_GROW_H
#define MPROF_REDUCE_GROW_H

#include <stdbool.h>
#include <stdlib.h>

/* Makes room for one more element of size bytes in *array, which holds
 * *used of *capacity; false when memory ran out (the array is kept). */
static inline bool grow(void **array, size_t *capacity, size_t used, size_t size)
{
    if (used < *capacity)
        return true;
    size_t wanted = *capacity ? *capacity * 2 : 256;
    void *bigger = realloc(*array, wanted * size);
    if (!bigger)
        return false;
    *array = bigger;
    *capacity = wanted;
    return true;
}

/* *array resized to count elements of size bytes (one byte more, so that
 * none is not NULL); false when memory ran out (the array is kept). */
static inline bool resize(void *array, size_t count, size_t size)
{
    void **pointer = array;
    void *resized = realloc(*pointer, count * size + 1);
    if (!resized)
        return false;
    *pointer = resized;
    return true;
}

#endif
