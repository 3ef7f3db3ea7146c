/* A daemon's start: closes descriptors 3 to 1023, opens two files of its
 * own (they take 3 and 4), asks for a snapshot with the dump signal
 * (SIGUSR1), waits for it, then writes "mine" into each.  The snapshot
 * must be written and both files must hold only "mine".
 *
 *     dump_fds FILE1 FILE2 SNAPSHOT */
#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    void *kept = malloc(77);
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    int first = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int second = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (first < 0 || second < 0)
        return 3;
    raise(SIGUSR1);
    for (int i = 0; i < 500 && access(argv[3], F_OK) != 0; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    if (write(first, "mine\n", 5) != 5 || write(second, "mine\n", 5) != 5)
        return 4;
    free(kept);
    return 0;
}
