/* What the leak-kind test targets share: leaving no stale copy of a
 * block's address where a scan of roots at exit would read it, in the dead
 * words below the caller's frame that later frames reuse, or in the
 * registers a call leaves as it was (memset and memcpy return their
 * destination).  memcheck skips such words, knowing them undefined; a
 * scan cannot tell, so the targets clear them. */
#ifndef SCRUB_H
#define SCRUB_H

#include <stdint.h>

#ifndef SCRUB_WORDS
#define SCRUB_WORDS 64
#endif

__attribute__((noinline, unused)) static void scrub(void)
{
    volatile uintptr_t words[SCRUB_WORDS] __attribute__((unused));
    for (int i = 0; i < SCRUB_WORDS; i++)
        words[i] = 0;
    __asm__ volatile("xor %%eax, %%eax; xor %%edx, %%edx; xor %%ecx, %%ecx; xor %%esi, %%esi; xor %%edi, %%edi;"
                     "xor %%r8d, %%r8d; xor %%r9d, %%r9d; xor %%r10d, %%r10d; xor %%r11d, %%r11d"
                     :
                     :
                     : "rax", "rdx", "rcx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory");
}

#endif
