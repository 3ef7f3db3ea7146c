/* Test target for the leak kinds (issue 49): blocks whose only pointers are on a running thread's stack or in a
 * running thread's register when main calls exit(0).
 *
 * Expected, as memcheck says (tests/e2e/test_leak_kinds.py checks it):
 *   still reachable  on_stack 1 x 200 (a local of the parked thread), in_register 1 x 300 (r12 of the spinner)
 *   definitely lost  dropped_by_thread 1 x 400 (the parked thread's, pointer dropped before it parks)
 *   possibly lost    main 2 x 272 (pthread_create's DTVs: glibc keeps a pointer to their second word only)
 * A scan that reads neither the other threads' stacks nor their registers calls the first two lost. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include "scrub.h"

static volatile int stack_ready, register_ready;

static void *on_stack(void) { return malloc(200); }
static void *in_register(void) { return malloc(300); }

static void dropped_by_thread(void) {
    char *volatile p = malloc(400);
    /* Not memset: it leaves the block's address in a register no later call on this thread overwrites. */
    for (int i = 0; i < 400; i++)
        p[i] = 0;
}

static void *parked(void *unused) {
    (void)unused;
    dropped_by_thread();
    scrub();
    void *volatile kept = on_stack();
    (void)kept;
    stack_ready = 1;
    for (;;)
        pause();
    return NULL;
}

static void *spinning(void *unused) {
    (void)unused;
    /* r12 is callee-saved: nothing the loop calls (none) or the kernel changes it.  The empty asm that reads it
     * keeps the value live and out of memory; -O0 gives a register variable no stack slot. */
    register uintptr_t held asm("r12") = (uintptr_t)in_register();
    register_ready = 1;
    for (;;)
        __asm__ volatile("" : : "r"(held));
    return NULL;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, parked, NULL);
    pthread_create(&b, NULL, spinning, NULL);
    while (!stack_ready || !register_ready)
        sched_yield();
    exit(0);
}
