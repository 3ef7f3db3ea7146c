/* A daemon's start, for the watch protocol's credentials (mprof(5),
 * WATCHING A RUNNING PROCESS): it changes what the kernel lets its user see
 * of it as MODE says, prints "ready", then makes and frees 64 blocks of 512
 * bytes every 10 ms until it is killed (the monitor looks for requests as a
 * program allocates).  MODE:
 *   drop           drops root for nobody (uid and gid 65534), as a daemon
 *                  does, which leaves it not dumpable;
 *   drop-dumpable  drops root for nobody, then makes itself dumpable again;
 *   regroup-dumpable  keeps its user but takes nobody's group (65534),
 *                  then makes itself dumpable again;
 *   undumpable     keeps its user and makes itself not dumpable, as
 *                  ssh-agent does;
 *   plain          changes nothing.
 * Usage: dropper MODE */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define NOBODY 65534
#define BLOCKS 64

static void drop(void)
{
    if (setgroups(0, NULL) != 0 || setresgid(NOBODY, NOBODY, NOBODY) != 0 || setresuid(NOBODY, NOBODY, NOBODY) != 0)
        exit(2);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    const char *mode = argv[1];
    if (strcmp(mode, "drop") == 0) {
        drop();
    } else if (strcmp(mode, "drop-dumpable") == 0) {
        drop();
        if (prctl(PR_SET_DUMPABLE, 1) != 0)
            return 2;
    } else if (strcmp(mode, "regroup-dumpable") == 0) {
        if (setgroups(0, NULL) != 0 || setresgid(NOBODY, NOBODY, NOBODY) != 0 || prctl(PR_SET_DUMPABLE, 1) != 0)
            return 2;
    } else if (strcmp(mode, "undumpable") == 0) {
        if (prctl(PR_SET_DUMPABLE, 0) != 0)
            return 2;
    } else if (strcmp(mode, "plain") != 0) {
        return 2;
    }
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        void *blocks[BLOCKS];
        for (int i = 0; i < BLOCKS; i++)
            blocks[i] = malloc(512);
        for (int i = 0; i < BLOCKS; i++)
            free(blocks[i]);
        usleep(10000);
    }
}
