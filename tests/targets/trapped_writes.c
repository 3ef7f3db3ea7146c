/* A process under a seccomp filter that traps every write(2) with SIGSYS
 * (SECCOMP_RET_TRAP), as a sandbox that emulates system calls does: its
 * handler counts each one and answers it as if all its bytes were written,
 * without writing them.  It waits reading stdin and answers each line with
 * "writes W" through writev, which the filter lets through.  It says
 * "ready" first. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "seccomp_filter.h"

/* si_code of a seccomp filter's SIGSYS (the kernel's asm-generic/siginfo.h;
 * glibc's headers lack it). */
#define SECCOMP_TRAPPED 1

static volatile sig_atomic_t writes;

static void answer(int number, siginfo_t *info, void *context)
{
    (void)number;
    if (info->si_code != SECCOMP_TRAPPED || info->si_syscall != SYS_write)
        return;
    writes++;
    /* Answered where the write was made: the kernel leaves the thread just
     * past its syscall instruction, skipped. */
    greg_t *registers = ((ucontext_t *)context)->uc_mcontext.gregs;
    if (registers[REG_RIP] == (greg_t)(uintptr_t)info->si_call_addr)
        registers[REG_RAX] = registers[REG_RDX];
}

static void say(const char *text)
{
    struct iovec line = {(void *)text, strlen(text)};
    writev(STDOUT_FILENO, &line, 1);
}

int main(void)
{
    struct sigaction action = {.sa_sigaction = answer, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&action.sa_mask);
    struct sock_filter code[] = {
        SECCOMP_LOAD_NUMBER,
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    if (sigaction(SIGSYS, &action, NULL) != 0 || seccomp_install(code, sizeof code / sizeof *code) != 0) {
        perror("trapped_writes: seccomp");
        return 1;
    }
    say("ready\n");
    char text[256];
    ssize_t got;
    while ((got = read(STDIN_FILENO, text, sizeof text)) > 0)
        for (ssize_t i = 0; i < got; i++)
            if (text[i] == '\n') {
                char line[64];
                snprintf(line, sizeof line, "writes %d\n", (int)writes);
                say(line);
            }
    return 0;
}
