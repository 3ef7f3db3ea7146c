/* kill_at_syscall N COMMAND...: runs COMMAND traced and kills it with
 * SIGKILL as it is about to make its Nth system call, counted from its
 * first ptrace(2) call (N = 1: that call itself); prints "killed", or
 * "finished after M" when it made only M.  For the tests of what a process
 * is left with when mprof-inject dies at each of its steps. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    long kill_at = atol(argv[1]);
    pid_t child = fork();
    if (child == 0) {
        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        raise(SIGSTOP);
        execvp(argv[2], argv + 2);
        _exit(127);
    }
    int status;
    if (waitpid(child, &status, 0) != child ||
        ptrace(PTRACE_SETOPTIONS, child, NULL,
               (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL)) != 0)
        return 1;
    long counted = 0;
    int deliver = 0;
    for (;;) {
        if (ptrace(PTRACE_SYSCALL, child, NULL, (void *)(long)deliver) != 0 || waitpid(child, &status, 0) != child)
            return 1;
        deliver = 0;
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            printf("finished after %ld\n", counted);
            return 0;
        }
        if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
            if (!(status >> 16)) /* a signal, not the exec's event */
                deliver = WSTOPSIG(status);
            continue;
        }
        struct __ptrace_syscall_info info;
        if (ptrace(PTRACE_GET_SYSCALL_INFO, child, (void *)sizeof info, &info) <= 0)
            return 1;
        if (info.op != PTRACE_SYSCALL_INFO_ENTRY || (!counted && info.entry.nr != SYS_ptrace))
            continue;
        if (++counted == kill_at) {
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
            printf("killed\n");
            return 0;
        }
    }
}
