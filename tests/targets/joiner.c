/* A process whose main thread waits in pthread_join (a futex: no safe
 * point) for a second thread that reads stdin a line at a time: "park"
 * makes that one answer "parked" and wait in a futex too, for good, so
 * that no thread of the process waits at a safe point; any other line it
 * answers "line".  It says "ready" first. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>

static void *reader(void *unused)
{
    (void)unused;
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        if (strcmp(line, "park\n") == 0) {
            puts("parked");
            fflush(stdout);
            sem_t never;
            sem_init(&never, 0, 0);
            for (;;)
                sem_wait(&never);
        }
        puts("line");
        fflush(stdout);
    }
    return NULL;
}

int main(void)
{
    pthread_t thread;
    if (pthread_create(&thread, NULL, reader, NULL) != 0)
        return 1;
    puts("ready");
    fflush(stdout);
    pthread_join(thread, NULL);
    return 0;
}
