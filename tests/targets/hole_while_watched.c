/* A hole the program makes in its own region while mprof top starts
 * watching it: 24 MiB mapped, its first 16 MiB unmapped; "ready" printed.
 * Until a line comes on stdin it allocates (so that the monitor notices
 * the viewer's request), then it unmaps the whole region, hole included
 * (legal: unmapped pages are no error), prints "unmapped" and allocates
 * until a second line, then exits. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static void allocate_until_a_line(void)
{
    struct pollfd input = {.fd = 0, .events = POLLIN};
    while (poll(&input, 1, 1) == 0)
        free(malloc(100));
    char line[16];
    if (!fgets(line, sizeof line, stdin))
        exit(1);
}

int main(void)
{
    char *region = mmap(NULL, 24 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED)
        return 1;
    munmap(region, 16 * MIB);
    printf("ready\n");
    fflush(stdout);
    allocate_until_a_line();
    munmap(region, 24 * MIB);
    printf("unmapped\n");
    fflush(stdout);
    allocate_until_a_line();
    return 0;
}
