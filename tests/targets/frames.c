/* Allocations below frames of every shape a stack walk meets, compiled
 * with -O2 -fomit-frame-pointer: stack-pointer frames small and large
 * (over 64 KB), a frame-pointer frame (alloca), libc's frames (qsort's
 * callback), recursion of changing depth, a signal handler's frame, and a
 * makecontext(3) coroutine's stack.  Every block is kept, so each chain
 * shows in the leak table; each shape allocates its own size (101 to 106,
 * 200 + depth). */
#include <alloca.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;

NOINLINE static void *leaf(size_t size)
{
    void *block = malloc(size);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    return block;
}

NOINLINE static void *small_frame(size_t size)
{
    void *block = leaf(size);
    __asm__ volatile("" ::: "memory");
    return block;
}

NOINLINE static void *large_frame(size_t size)
{
    volatile char buffer[70000];
    buffer[size] = 1;
    void *block = leaf(size + buffer[size] - 1);
    __asm__ volatile("" ::: "memory");
    return block;
}

NOINLINE static void *frame_pointer_frame(size_t size, size_t extra)
{
    char *scratch = alloca(extra);
    memset(scratch, 0, extra);
    void *block = leaf(size + (size_t)scratch[extra - 1]);
    __asm__ volatile("" ::: "memory");
    return block;
}

static int compare(const void *left, const void *right)
{
    sink = leaf(103);
    return *(const int *)left - *(const int *)right;
}

NOINLINE static void sorted(void)
{
    int numbers[2] = {2, 1};
    qsort(numbers, 2, sizeof numbers[0], compare);
    __asm__ volatile("" ::: "memory");
}

NOINLINE static void *recursive(unsigned depth, unsigned remaining)
{
    void *block = remaining ? recursive(depth, remaining - 1) : leaf(200 + depth);
    __asm__ volatile("" ::: "memory");
    return block;
}

static void on_signal(int signal_number)
{
    (void)signal_number;
    sink = small_frame(105);
}

static ucontext_t main_context, coroutine_context;

static void coroutine_body(void)
{
    for (;;) {
        sink = small_frame(106);
        swapcontext(&coroutine_context, &main_context);
    }
}

int main(void)
{
    static char coroutine_stack[256 * 1024];
    getcontext(&coroutine_context);
    coroutine_context.uc_stack.ss_sp = coroutine_stack;
    coroutine_context.uc_stack.ss_size = sizeof coroutine_stack;
    makecontext(&coroutine_context, coroutine_body, 0);
    signal(SIGUSR1, on_signal);
    for (unsigned round = 0; round < 3; round++) {
        sink = small_frame(101);
        sink = large_frame(102);
        sink = frame_pointer_frame(104, 16 + 4096 * round);
        sorted();
        for (unsigned depth = 1; depth <= 40; depth += 13)
            sink = recursive(depth, depth);
        raise(SIGUSR1);
        swapcontext(&main_context, &coroutine_context);
    }
    return 0;
}
