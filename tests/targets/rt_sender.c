/* rt_sender PID: queues SIGRTMIN to PID with sigqueue, the values 1, 2,
 * 3... in order, about every 10 microseconds, until SIGTERM; then prints
 * "sent N" (for rt_signals.c).  It waits while the user's queued signals
 * are QUEUED_AT_MOST or more: the kernel's limit on them (RLIMIT_SIGPENDING)
 * is the user's, not the receiver's, and a receiver stopped in a call of
 * mprof-inject's would otherwise take all of it, and every other program of
 * the user's (a test beside this one) would find sigqueue and timer_create
 * refused. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define QUEUED_AT_MOST 1000

static volatile sig_atomic_t stop;

/* The signals queued to the user's processes, from /proc/self/status's
 * SigQ line; 0 when it cannot be read. */
static long user_queued(void)
{
    char status[4096];
    int fd = open("/proc/self/status", O_RDONLY);
    ssize_t length = fd < 0 ? -1 : read(fd, status, sizeof status - 1);
    if (fd >= 0)
        close(fd);
    if (length <= 0)
        return 0;
    status[length] = '\0';
    const char *line = strstr(status, "\nSigQ:");
    return line ? strtol(line + strlen("\nSigQ:"), NULL, 10) : 0;
}

static void on_term(int number)
{
    (void)number;
    stop = 1;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    pid_t pid = atoi(argv[1]);
    signal(SIGTERM, on_term);
    int sent = 0;
    struct timespec pause = {0, 10000};
    while (!stop) {
        if (sent % 64 == 0 && user_queued() >= QUEUED_AT_MOST) {
            nanosleep(&(struct timespec){0, 1000000}, NULL);
            continue;
        }
        union sigval value = {.sival_int = sent + 1};
        if (sigqueue(pid, SIGRTMIN, value) == 0)
            sent++;
        else if (errno != EAGAIN)
            return 1;
        nanosleep(&pause, NULL);
    }
    printf("sent %d\n", sent);
    return 0;
}
