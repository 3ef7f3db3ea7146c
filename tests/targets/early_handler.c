/* A library whose constructor installs a SIGSEGV handler; preloaded after
 * libmprof in LD_PRELOAD, it is initialised first, so its handler is in
 * place before the monitor's.  The handler says so and ends the process
 * with _exit(42). */
#include <signal.h>
#include <unistd.h>

static void on_fault(int signal_number)
{
    (void)signal_number;
    static const char line[] = "early handler\n";
    if (write(STDOUT_FILENO, line, sizeof line - 1) < 0)
        _exit(99);
    _exit(42);
}

__attribute__((constructor)) static void install(void)
{
    struct sigaction action = {.sa_handler = on_fault};
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, NULL);
}
