/* For each line on stdin: forks a child that allocates (1000 blocks made
 * and freed, 1 of 100 bytes kept) and exits with status 7, then forks one
 * that executes /bin/true, then vforks one that does (sharing this
 * process's memory until it has); keeps 200 bytes itself under main, and
 * answers "children 7 0 0" with the three statuses. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int status_of(pid_t child)
{
    int status;
    return waitpid(child, &status, 0) == child && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(void)
{
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        pid_t allocating = fork();
        if (allocating == 0) {
            for (int i = 0; i < 1000; i++)
                free(malloc(64));
            if (!malloc(100))
                _exit(1);
            _exit(7);
        }
        int allocated = status_of(allocating);
        pid_t executing = fork();
        if (executing == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(99);
        }
        int executed = status_of(executing);
        pid_t sharing = vfork();
        if (sharing == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(99);
        }
        int shared = status_of(sharing);
        if (!malloc(200))
            return 1;
        printf("children %d %d %d\n", allocated, executed, shared);
        fflush(stdout);
    }
    return 0;
}
