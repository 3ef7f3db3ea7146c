/* Takes 5 objects of 40 bytes from pool_early.c's pool, made before main,
 * and keeps them.  With "fork": then forks; the child takes 1 more object
 * of 40 bytes, and 2 of the scratch pool, given back, and exits; the
 * parent waits for it, then takes 2 of the scratch pool too. */
#include <stddef.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *early_object(size_t size);
void scratch_objects(unsigned count);

int main(int argc, char **argv)
{
    for (int i = 0; i < 5; i++)
        early_object(40);
    if (argc < 2 || strcmp(argv[1], "fork") != 0)
        return 0;
    pid_t child = fork();
    if (child < 0)
        return 1;
    if (child == 0) {
        early_object(40);
        scratch_objects(2);
        return 0;
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 1;
    scratch_objects(2);
    return 0;
}
