/* A parent that forks twice: one child allocates and exits, the other
 * allocates and then executes LEAF.  Block sizes tell the processes apart:
 * parent 100 bytes, first child 200, second child 300 before the exec.
 *
 *     forkexec LEAF */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void allocate(int count, size_t size, int kept)
{
    for (int i = 0; i < count; i++) {
        void *block = malloc(size);
        if (i >= kept)
            free(block);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    allocate(10, 100, 1);
    void *inherited = malloc(111);
    pid_t first = fork();
    if (first == 0) {
        free(inherited); /* the parent's block: the child must not count it as its own */
        allocate(20, 200, 2);
        exit(0);
    }
    pid_t second = fork();
    if (second == 0) {
        allocate(30, 300, 3);
        execl(argv[1], argv[1], (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(first, &status, 0);
    waitpid(second, &status, 0);
    allocate(5, 100, 0);
    free(inherited);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
