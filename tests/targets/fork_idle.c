/* A parent that only forks and waits, allocating nothing itself, as a
 * launcher or supervisor does; its child allocates 25 blocks of 40 bytes
 * in child_work and keeps the last 5.  Ends with the child's status, 3. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* The kept blocks, read by no one: the child exits holding them. */
void *volatile kept[5];

__attribute__((noinline)) static void child_work(void)
{
    for (int i = 0; i < 25; i++) {
        void *block = malloc(40);
        if (i < 20)
            free(block);
        else
            kept[i - 20] = block;
    }
}

int main(void)
{
    pid_t child = fork();
    if (child == 0) {
        child_work();
        _exit(3);
    }
    int status;
    if (child < 0 || waitpid(child, &status, 0) != child)
        return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
