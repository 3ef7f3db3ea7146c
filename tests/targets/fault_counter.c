/* A process that counts the SIGSEGVs other processes send it (kill,
 * tgkill, sigqueue), by whether they came queued with a value (SI_QUEUE,
 * value 5) or not, and waits reading stdin a line at a time: for each
 * line it answers "queued Q other O".  It says "ready" first. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t queued, other;

static void count(int number, siginfo_t *info, void *context)
{
    (void)number, (void)context;
    if (info->si_code == SI_QUEUE && info->si_value.sival_int == 5)
        queued++;
    else
        other++;
}

int main(void)
{
    struct sigaction action = {.sa_sigaction = count, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGSEGV, &action, NULL) != 0)
        return 1;
    printf("ready\n");
    fflush(stdout);
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        printf("queued %d other %d\n", (int)queued, (int)other);
        fflush(stdout);
    }
    return 0;
}
