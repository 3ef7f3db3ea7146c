/* Blocks reallocated and freed by a fork child that the monitor does not
 * follow (MPROF_FOLLOW=0), where it forwards every call without recording:
 * the parent's blocks still carry its header, which must move with them.
 * The child prints "child reallocs ok", or what broke; the parent exits
 * with the child's status. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void fail(const char *what)
{
    fprintf(stderr, "unfollowed_realloc: %s\n", what);
    _exit(1);
}

static int has_pattern(const unsigned char *block, size_t size)
{
    for (size_t i = 0; i < size; i++)
        if (block[i] != (unsigned char)(i * 7))
            return 0;
    return 1;
}

static void child(unsigned char *kept, void *emptied)
{
    kept = realloc(kept, 100000);
    if (!kept || !has_pattern(kept, 100) || malloc_usable_size(kept) < 100000)
        fail("grown block");
    kept = realloc(kept, 10);
    if (!kept || !has_pattern(kept, 10) || malloc_usable_size(kept) < 10)
        fail("shrunk block");
    if (realloc(emptied, 0) != NULL)
        fail("realloc to 0 bytes did not free");
    free(kept);
    puts("child reallocs ok");
    exit(0);
}

int main(void)
{
    unsigned char *kept = malloc(100);
    void *emptied = malloc(50);
    if (!kept || !emptied)
        return 1;
    for (size_t i = 0; i < 100; i++)
        kept[i] = (unsigned char)(i * 7);
    pid_t pid = fork();
    if (pid == 0)
        child(kept, emptied);
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 1;
    return WEXITSTATUS(status);
}
