/* A library for the tests of mprof-inject to call into a process:
 * probe_twice(N) answers 2N+1; probe_wait(DIR) creates DIR/inside, then
 * waits until DIR/release exists and answers 7, so that a test can act
 * while a thread of the process runs the call. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int probe_twice(const char *argument)
{
    return 2 * atoi(argument) + 1;
}

int probe_wait(const char *directory)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/inside", directory);
    int created = open(path, O_CREAT | O_WRONLY, 0600);
    if (created < 0)
        return -1;
    close(created);
    snprintf(path, sizeof path, "%s/release", directory);
    struct timespec pause = {0, 1000000};
    while (access(path, F_OK) != 0)
        nanosleep(&pause, NULL);
    return 7;
}
