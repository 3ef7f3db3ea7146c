/* A timer's handler frees blocks that the main loop allocated, often while
 * the monitor is busy recording the main loop's own allocations on the same
 * thread.  Every large block must be counted allocated once and freed once.
 *
 * The large blocks (256 KiB, above a fixed mmap threshold) are mapped and
 * unmapped by glibc without its arena, which keeps free() safe in the
 * handler; the main loop's small blocks, allocated 30 calls deep, keep the
 * monitor busy most of the time.  Prints the large blocks allocated and how
 * many of them the handler freed.  With "realloc", the handler first
 * reallocates each block to 1 MiB (mremap moves it), then frees that.
 *
 *     handler_frees LOOPS [realloc] */
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static _Atomic(void *) slot;
static volatile sig_atomic_t handler_frees;
static int reallocate;

static void on_alarm(int signal_number)
{
    (void)signal_number;
    void *block = atomic_exchange(&slot, NULL);
    if (block) {
        free(reallocate ? realloc(block, 1024 * 1024) : block);
        handler_frees++;
    }
}

__attribute__((noinline)) static void *large(void)
{
    return malloc(256 * 1024);
}

__attribute__((noinline)) static void descend(int depth)
{
    if (depth > 0) {
        descend(depth - 1);
        return;
    }
    for (int i = 0; i < 20; i++)
        free(malloc(24 + i));
}

int main(int argc, char **argv)
{
    long loops = argc > 1 ? atol(argv[1]) : 20000;
    reallocate = argc > 2 && !strcmp(argv[2], "realloc");
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    struct sigaction action = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigemptyset(&action.sa_mask);
    sigaction(SIGALRM, &action, NULL);
    struct itimerval every = {{0, 50}, {0, 50}};
    setitimer(ITIMER_REAL, &every, NULL);
    for (long i = 0; i < loops; i++) {
        void *previous = atomic_exchange(&slot, large());
        free(previous);
        descend(30);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    free(atomic_exchange(&slot, NULL));
    char line[64];
    int length = snprintf(line, sizeof line, "%ld %d\n", loops, (int)handler_frees);
    return write(STDOUT_FILENO, line, (size_t)length) == length ? 0 : 1;
}
