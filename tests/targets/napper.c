/* A process whose only thread waits in poll on stdin with a timeout of
 * 20 ms, over and over: a wait the kernel, interrupted, continues through
 * its restart block, as it does nanosleep.  It counts the polls that
 * failed or answered more than its one descriptor (a restart the kernel
 * did not make shows so), and for each line on stdin answers "failed F".
 * It says "ready" first. */
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    printf("ready\n");
    fflush(stdout);
    unsigned failed = 0;
    for (;;) {
        struct pollfd input = {.fd = STDIN_FILENO, .events = POLLIN};
        int ready = poll(&input, 1, 20);
        if (ready < 0 || ready > 1) {
            failed++;
            continue;
        }
        if (ready == 0)
            continue;
        char text[256];
        ssize_t got = read(STDIN_FILENO, text, sizeof text);
        if (got <= 0)
            return 0;
        for (ssize_t i = 0; i < got; i++)
            if (text[i] == '\n')
                printf("failed %u\n", failed);
        fflush(stdout);
    }
}
