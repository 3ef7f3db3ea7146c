/* Test target for the leak kinds (issue 49): blocks whose only pointer lies in an anonymous region the program
 * mapped itself, kept mapped or unmapped before exit.
 *
 * Expected, as memcheck says (tests/e2e/test_leak_kinds.py checks it):
 *   still reachable  held_by_mapping 1 x 500 (its address in a region still mapped)
 *   definitely lost  held_by_unmapped 1 x 600 (its address only in a region unmapped since)
 * The regions themselves are no heap blocks to memcheck, nor leaks to mprof's classification (roots). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "scrub.h"

static void *held_by_mapping(void) { return malloc(500); }
static void *held_by_unmapped(void) { return malloc(600); }

static void *map_page(void) {
    return mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void build(void) {
    void **kept = map_page(), **gone = map_page();
    if (kept == MAP_FAILED || gone == MAP_FAILED)
        exit(1);
    kept[100] = held_by_mapping();
    gone[100] = held_by_unmapped();
    munmap(gone, 4096);
}

int main(void) {
    build();
    scrub();
    return 0;
}
