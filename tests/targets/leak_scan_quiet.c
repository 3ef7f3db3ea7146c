/* Test target for the leak scan's stop of the world (issue 49): threads
 * asleep in nanosleep, in a futex wait and in read(2) on a pipe, and one
 * spinning, while main asks for a snapshot (mprof_dump, which classifies
 * the blocks, every other thread stopped for the scan) and then frees the
 * blocks it kept.  What the program sees of that is printed:
 *   eintr N       system calls its threads saw fail with EINTR
 *   sigchld N     SIGCHLD signals its handler got
 *   children R    waitpid(-1, WNOHANG)'s result after the snapshot (-1: none)
 *   fds B A       open descriptors before and after the snapshot
 *   spins moved Y the spinning thread ran on after it
 * Expected: eintr 0, sigchld 0, children -1, fds equal, spins moved 1.
 * The blocks: KEPT blocks of 24 bytes from a global array (reachable at the
 * snapshot, freed before exit), LOST blocks of 40 bytes dropped at once
 * (definitely lost, at the snapshot and at exit), and FREED blocks of 24
 * bytes freed before the snapshot (glibc keeps some in its fastbins, whose
 * bytes after the link stay as they were: no block). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../monitor/mprof.h"

#define KEPT 50
#define LOST 7
#define FREED 1000

static atomic_int stopping, eintr_seen, sigchld_seen;
static atomic_long spins;
static int futex_word;
static int pipe_ends[2];
void *kept[KEPT];

static void on_sigchld(int signal_number)
{
    (void)signal_number;
    atomic_fetch_add(&sigchld_seen, 1);
}

static void *sleeper(void *unused)
{
    (void)unused;
    while (!atomic_load(&stopping)) {
        struct timespec pause = {0, 20 * 1000 * 1000};
        if (nanosleep(&pause, NULL) != 0 && errno == EINTR)
            atomic_fetch_add(&eintr_seen, 1);
    }
    return NULL;
}

static void *waiter(void *unused)
{
    (void)unused;
    while (!atomic_load(&stopping)) {
        struct timespec pause = {0, 20 * 1000 * 1000};
        if (syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &pause, NULL, 0) != 0 && errno == EINTR)
            atomic_fetch_add(&eintr_seen, 1);
    }
    return NULL;
}

static void *reader(void *unused)
{
    (void)unused;
    char byte;
    for (;;) {
        ssize_t got = read(pipe_ends[0], &byte, 1);
        if (got < 0 && errno == EINTR)
            atomic_fetch_add(&eintr_seen, 1);
        else if (got != 0 || atomic_load(&stopping))
            return NULL;
    }
}

static void *spinner(void *unused)
{
    (void)unused;
    while (!atomic_load(&stopping))
        atomic_fetch_add(&spins, 1);
    return NULL;
}

static int open_descriptors(void)
{
    DIR *directory = opendir("/proc/self/fd");
    int count = 0;
    for (struct dirent *entry; (entry = readdir(directory));)
        count += entry->d_name[0] != '.';
    closedir(directory);
    return count - 1; /* the directory's own */
}

__attribute__((noinline)) static void lose(void)
{
    for (int i = 0; i < LOST; i++) {
        void *volatile block = malloc(40);
        memset(block, 0, 40);
    }
}

__attribute__((noinline)) static void free_many(void)
{
    void *blocks[FREED];
    for (int i = 0; i < FREED; i++) {
        blocks[i] = malloc(24);
        memset(blocks[i], 0x5a, 24);
    }
    for (int i = 0; i < FREED; i++)
        free(blocks[i]);
}

int main(void)
{
    signal(SIGCHLD, on_sigchld);
    if (pipe(pipe_ends) != 0)
        return 1;
    for (int i = 0; i < KEPT; i++)
        kept[i] = calloc(1, 24);
    lose();
    pthread_t threads[4];
    void *(*runs[4])(void *) = {sleeper, waiter, reader, spinner};
    for (int i = 0; i < 4; i++)
        pthread_create(&threads[i], NULL, runs[i], NULL);
    struct timespec settle = {0, 100 * 1000 * 1000};
    nanosleep(&settle, NULL);
    int before = open_descriptors();
    /* Right before the snapshot: no larger request has merged the freed
     * chunks yet (opendir's would). */
    free_many();
    MPROF_DUMP();
    int after = open_descriptors();
    pid_t child = waitpid(-1, NULL, WNOHANG);
    long spins_then = atomic_load(&spins);
    nanosleep(&settle, NULL);
    int moved = atomic_load(&spins) > spins_then;
    atomic_store(&stopping, 1);
    if (write(pipe_ends[1], "x", 1) != 1)
        return 1;
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < KEPT; i++)
        free(kept[i]);
    printf("eintr %d\nsigchld %d\nchildren %d\nfds %d %d\nspins moved %d\n", atomic_load(&eintr_seen),
           atomic_load(&sigchld_seen), (int)child, before, after, moved);
    return 0;
}
