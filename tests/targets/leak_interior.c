/* Test target for the leak kinds (issue 49): blocks whose only pointers from the roots point into their middle.
 *
 * Expected, as memcheck says with its default heuristics (tests/e2e/test_leak_kinds.py checks it):
 *   possibly lost    middle_block 1 x 100 (a global points 40 bytes in),
 *                    behind_middle 1 x 48 (pointed to at its start only from middle_block's block),
 *                    not_a_count 1 x 64 (pointed to 8 bytes in, its first word 0: no heuristic takes it)
 *   still reachable  length64_block 1 x 128 (8 bytes in, its first word the 120 bytes after it: "length64"),
 *                    counted_array 1 x 88 (8 bytes in, its first word 5 elements of 16: "newarray";
 *                    on 64-bit machines a length64 block is also one of these),
 *                    start_block 1 x 16 (pointed to at its start, for contrast)
 * No definitely or indirectly lost block: LeakSanitizer, which counts a pointer into a block as one to it, passes it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "scrub.h"

char *into_middle, *into_length64, *into_counted, *into_zero, *at_start;

static char *middle_block(void) { return malloc(100); }
static char *behind_middle(void) { return malloc(48); }
static char *length64_block(void) { return malloc(128); }
static char *counted_array(void) { return malloc(8 + 5 * 16); }
static char *not_a_count(void) { return malloc(64); }
static char *start_block(void) { return malloc(16); }

static void build(void) {
    char *middle = middle_block();
    memset(middle, 0, 100);
    char *behind = behind_middle();
    memset(behind, 0, 48);
    memcpy(middle + 8, &behind, sizeof behind);
    into_middle = middle + 40;

    char *length64 = length64_block();
    uint64_t remaining = 128 - 8;
    memcpy(length64, &remaining, 8);
    into_length64 = length64 + 8;

    char *counted = counted_array();
    uint64_t elements = 5;
    memcpy(counted, &elements, 8);
    into_counted = counted + 8;

    char *zero = not_a_count();
    memset(zero, 0, 64);
    into_zero = zero + 8;

    at_start = start_block();
}

int main(void) {
    build();
    scrub();
    return 0;
}
