/* A process whose only thread sleeps in nanosleep, 20 ms at a time, and
 * counts the sleeps that failed (a restart the kernel did not make shows
 * as an error).  Between sleeps it looks at stdin without waiting there:
 * for each line it answers "failed F".  It says "ready" first. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
    if (fcntl(STDIN_FILENO, F_SETFL, O_NONBLOCK) != 0)
        return 1;
    printf("ready\n");
    fflush(stdout);
    unsigned failed = 0;
    for (;;) {
        struct timespec pause = {0, 20000000};
        if (nanosleep(&pause, NULL) != 0)
            failed++;
        char text[256];
        ssize_t got = read(STDIN_FILENO, text, sizeof text);
        if (got == 0)
            return 0;
        for (ssize_t i = 0; i < got; i++)
            if (text[i] == '\n')
                printf("failed %u\n", failed);
        fflush(stdout);
    }
}
