/* For mprof attach's tests of an exec while attached.  A line at a time on
 * stdin:
 *   "keep N"     keep_block allocates N blocks of 3000 bytes and keeps
 *                them; the answer is "kept T" (T: all kept so far);
 *   "exec HOW"   executes this program again with the argument "after",
 *                through execl, execv, execvp or execve (HOW), with its
 *                input and output; the new program answers "after" first;
 *   "exec-fail"  calls execl on a file that does not exist; the answer is
 *                "failed" with errno's name.
 * Run with "after", it answers each line with "after". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK_SIZE 3000

extern char **environ;
static void *kept[1000];
static int kept_count;

__attribute__((noinline)) static void keep_block(void)
{
    kept[kept_count++] = malloc(BLOCK_SIZE);
}

static void execute(const char *how, char *self)
{
    char *arguments[] = {self, "after", NULL};
    if (!strcmp(how, "execl"))
        execl(self, self, "after", (char *)NULL);
    else if (!strcmp(how, "execv"))
        execv(self, arguments);
    else if (!strcmp(how, "execvp"))
        execvp(self, arguments);
    else if (!strcmp(how, "execve"))
        execve(self, arguments, environ);
    printf("exec %s failed\n", how);
}

int main(int argc, char **argv)
{
    char line[64];
    if (argc > 1) {
        printf("after\n");
        fflush(stdout);
        while (fgets(line, sizeof line, stdin)) {
            printf("after\n");
            fflush(stdout);
        }
        return 0;
    }
    /* The input is read a byte at a time, so that none of what follows an
     * exec line is left in this image's buffer. */
    setvbuf(stdin, NULL, _IONBF, 0);
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        int count;
        if (sscanf(line, "keep %d", &count) == 1 && count > 0 && kept_count + count <= 1000) {
            for (int i = 0; i < count; i++)
                keep_block();
            printf("kept %d\n", kept_count);
        } else if (!strncmp(line, "exec ", 5)) {
            fflush(stdout);
            execute(line + 5, argv[0]);
        } else if (!strcmp(line, "exec-fail")) {
            execl("/nonexistent/mprof-test-program", "x", (char *)NULL);
            printf("failed %s\n", errno == ENOENT ? "ENOENT" : strerror(errno));
        } else {
            printf("?\n");
        }
        fflush(stdout);
    }
    return 0;
}
