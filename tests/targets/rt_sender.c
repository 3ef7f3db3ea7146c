/* rt_sender PID: queues SIGRTMIN to PID with sigqueue, the values 1, 2,
 * 3... in order, about every 10 microseconds, until SIGTERM; then prints
 * "sent N" (for rt_signals.c).  It lets at most QUEUED_AT_MOST wait in the
 * receiver's queue: it counts what it sent since it last saw SIGRTMIN not
 * pending there (/proc/PID/status's ShdPnd), and waits at that many.  The
 * kernel's limit on queued signals (RLIMIT_SIGPENDING) is the user's, not
 * the receiver's: a receiver stopped in a call of mprof-inject's, or one
 * that never takes them, would otherwise take all of it, and every other
 * program of the user's (a test beside this one) would find sigqueue and
 * timer_create refused. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define QUEUED_AT_MOST 1000

static volatile sig_atomic_t stop;

static void on_term(int number)
{
    (void)number;
    stop = 1;
}

/* Whether SIGRTMIN waits in the process's queue (its ShdPnd mask); true
 * when its status cannot be read, so that nothing more is queued. */
static bool pending(pid_t pid)
{
    char path[64], status[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY);
    ssize_t length = fd < 0 ? -1 : read(fd, status, sizeof status - 1);
    if (fd >= 0)
        close(fd);
    if (length <= 0)
        return true;
    status[length] = '\0';
    const char *line = strstr(status, "\nShdPnd:");
    return !line || (strtoull(line + strlen("\nShdPnd:"), NULL, 16) >> (SIGRTMIN - 1) & 1);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    pid_t pid = atoi(argv[1]);
    signal(SIGTERM, on_term);
    int sent = 0;
    struct timespec pause = {0, 10000};
    int since_none_pending = 0;
    while (!stop) {
        if (since_none_pending % 64 == 0 && !pending(pid))
            since_none_pending = 0;
        if (since_none_pending >= QUEUED_AT_MOST) {
            nanosleep(&(struct timespec){0, 1000000}, NULL);
            since_none_pending = pending(pid) ? since_none_pending : 0;
            continue;
        }
        union sigval value = {.sival_int = sent + 1};
        if (sigqueue(pid, SIGRTMIN, value) == 0) {
            sent++;
            since_none_pending++;
        } else if (errno != EAGAIN) {
            return 1;
        }
        nanosleep(&pause, NULL);
    }
    printf("sent %d\n", sent);
    return 0;
}
