/* Test target for the leak kinds (issue 49): a block whose address is left only in dead stack frames, below main's,
 * when main returns.
 *
 * Expected, as memcheck says (tests/e2e/test_leak_kinds.py checks it):
 *   definitely lost  lost_early 1 x 24
 * Every word of spread's 16 KiB frame holds the address when it returns; exit's frames and those of whatever runs
 * at exit (atexit handlers, destructors, a scan's own) are made over those words.  memcheck scans the stack from the
 * stack pointer of the exit_group call; a scan that starts from a deeper frame of its own, with slots not yet
 * written, reads the stale copies and calls the block reachable. */
#include <stdint.h>
#include <stdlib.h>

static void *lost_early(void) { return malloc(24); }

static void spread(void) {
    void *p = lost_early();
    volatile uintptr_t words[2048];
    for (int i = 0; i < 2048; i++)
        words[i] = (uintptr_t)p;
}

int main(void) {
    spread();
    return 0;
}
