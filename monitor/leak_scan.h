/* The leak kinds of the blocks live now, as memcheck and LeakSanitizer
 * tell them at exit (mprof(5)'s LEAK): every other thread stopped, the
 * roots scanned, the blocks flooded (reach.h), the figures summed by path. */
#ifndef MPROF_LEAK_SCAN_H
#define MPROF_LEAK_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h"

/* A block's address the monitor keeps in a thread's TLS (a pool's anchor
 * cached, a free waiting, the traced realloc's old block), hidden from the
 * leak scan, which reads every thread's TLS as the program's roots: with
 * its top bits flipped it points nowhere a block can be.  Its own inverse. */
#define LEAK_HIDDEN_BITS (UINT64_C(0xa5) << 56)
static inline uintptr_t leak_hidden(uintptr_t address)
{
    return address ^ LEAK_HIDDEN_BITS;
}

/* The calling thread's share of the roots: its stack from where the
 * program called the monitor up (the frames below, the monitor's own and
 * those that ran before them and left their words behind, hold nothing of
 * the program's: memcheck too scans from the stack pointer of the exit),
 * and the callee-saved registers as the program left them. */
#define LEAK_CALLER_REGISTERS 6
struct leak_caller {
    uintptr_t stack_from; /* 0: the caller is a thread of the monitor's own, no roots */
    uint64_t registers[LEAK_CALLER_REGISTERS];
};

/* The figures: by record (a path id) from first_record, the blocks and
 * bytes of each kind in enum mprof_leak_kind's order. */
struct leak_scan {
    uint64_t flags; /* MPROF_LEAK_ */
    uint64_t threads_stopped, threads_unstopped;
    uint64_t root_bytes, block_bytes, ns;
    uint32_t first_record, record_count;
    uint64_t (*by_record)[MPROF_LEAK_FIELD_COUNT];
    size_t by_record_room;
};

/* The registers and the stack pointer of the program's call into the
 * function that uses this (an exit handler, _exit): a macro, so that they
 * are its caller's, the return address and the saved frame pointer lying
 * just below that stack pointer. */
#define LEAK_CALLER_INIT(caller)                                                                       \
    do {                                                                                               \
        __asm__ volatile("mov %%rbx, 0(%0)\n\tmov %%rbp, 8(%0)\n\tmov %%r12, 16(%0)\n\t"               \
                         "mov %%r13, 24(%0)\n\tmov %%r14, 32(%0)\n\tmov %%r15, 40(%0)"                 \
                         :                                                                             \
                         : "r"((caller)->registers)                                                    \
                         : "memory");                                                                  \
        (caller)->stack_from = (uintptr_t)__builtin_frame_address(0) + 16;                             \
    } while (0)

/* Classifies the live blocks of records [first_record, first_record +
 * record_count) into scan; false, and scan empty, when it cannot (out of
 * memory, or /proc unreadable). */
bool leak_scan(struct leak_scan *scan, const struct leak_caller *caller, uint32_t first_record,
               uint32_t record_count);
void leak_scan_release(struct leak_scan *scan);

#endif
