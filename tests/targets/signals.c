/* A timer's handler allocates and frees while the main loop allocates and
 * frees too, so the handler often interrupts the monitor itself.  Prints
 * how many blocks the handler allocated. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t handler_blocks;

static void on_alarm(int signal_number)
{
    (void)signal_number;
    free(malloc(24));
    handler_blocks++;
}

int main(int argc, char **argv)
{
    long loops = argc > 1 ? atol(argv[1]) : 2000000;
    struct sigaction action = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigaction(SIGALRM, &action, NULL);
    struct itimerval every = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &every, NULL);
    for (long i = 0; i < loops; i++)
        free(malloc((size_t)(i % 512)));
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    char line[64];
    int length = snprintf(line, sizeof line, "handler %d\n", (int)handler_blocks);
    return write(STDOUT_FILENO, line, (size_t)length) == length ? 0 : 1;
}
