/* rt_sender PID: queues SIGRTMIN to PID with sigqueue, the values 1, 2,
 * 3... in order, about every 10 microseconds (waiting while the receiver's
 * queue is full), until SIGTERM; then prints "sent N" (for rt_signals.c). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile sig_atomic_t stop;

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
