/* Suspends as less does on ^Z: its SIGTSTP handler only notes the signal;
 * the main loop, woken, then takes 300 ms to put the terminal back, says
 * "stopping" and stops itself by SIGTSTP at its default action.  Continued,
 * it says "continued" and waits again.  It allocates 10 blocks of 33 bytes
 * at the start and ends with status 0 at a line on stdin.
 *
 *     jobstop          as above
 *     jobstop ignore   SIGTSTP ignored, as a program that will not be
 *                      suspended has it: ^Z does nothing to it */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t suspend_asked;

static void on_tstp(int signal_number)
{
    (void)signal_number;
    suspend_asked = 1;
}

static void say(const char *line)
{
    if (write(STDOUT_FILENO, line, strlen(line)) < 0)
        _exit(99);
}

int main(int argc, char **argv)
{
    for (int i = 0; i < 10; i++)
        if (!malloc(33))
            return 2;
    struct sigaction action = {.sa_handler = argc > 1 && !strcmp(argv[1], "ignore") ? SIG_IGN : on_tstp};
    sigaction(SIGTSTP, &action, NULL);
    /* Taken only inside pselect, so that a ^Z that comes before it waits
     * is not missed. */
    sigset_t tstp, others;
    sigemptyset(&tstp);
    sigaddset(&tstp, SIGTSTP);
    sigprocmask(SIG_BLOCK, &tstp, &others);
    say("ready\n");
    for (;;) {
        if (suspend_asked) {
            suspend_asked = 0;
            nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
            say("stopping\n");
            signal(SIGTSTP, SIG_DFL);
            raise(SIGTSTP);
            sigprocmask(SIG_SETMASK, &others, NULL); /* stops here */
            sigprocmask(SIG_BLOCK, &tstp, NULL);
            sigaction(SIGTSTP, &action, NULL);
            say("continued\n");
        }
        fd_set readable;
        FD_ZERO(&readable);
        FD_SET(STDIN_FILENO, &readable);
        if (pselect(STDIN_FILENO + 1, &readable, NULL, NULL, NULL, &others) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        char byte;
        ssize_t got = read(STDIN_FILENO, &byte, 1);
        if (got == 1 && byte == '\n')
            return 0;
        if (got <= 0)
            return 1;
    }
}
