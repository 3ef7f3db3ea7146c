/* Runs a command with glibc's own signals, 32 and 33, at their default
 * action: GNU make hands the commands it runs those two ignored, and
 * neither sigaction(2) through glibc nor a shell can give them back, so
 * this asks the kernel directly.
 *     default_signals COMMAND [ARGS...] */
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's struct sigaction on x86-64 and most others. */
struct kernel_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    unsigned long mask;
};

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    struct kernel_sigaction action = {.handler = SIG_DFL};
    for (int number = 32; number <= 33; number++) {
        if (syscall(SYS_rt_sigaction, number, &action, NULL, sizeof action.mask) != 0) {
            perror("rt_sigaction");
            return 2;
        }
    }
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    return 127;
}
