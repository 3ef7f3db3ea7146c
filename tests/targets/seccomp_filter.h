/* What the test targets' seccomp filters share: the opening that lets
 * another architecture's calls through and loads the call's number, and
 * the installing, and the running of a program under a filter. */
#ifndef SECCOMP_FILTER_H
#define SECCOMP_FILTER_H

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

#define SECCOMP_LOAD_NUMBER                                                      \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),     \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),            \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),                            \
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))

/* The filter of count instructions from now on, for this process and what
 * it executes (no new privileges, as an unprivileged process needs); 0, or
 * -1 with errno set. */
static inline int seccomp_install(struct sock_filter *code, unsigned short count)
{
    struct sock_fprog program = {count, code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program);
}

/* For a wrapper named name: runs argv[1], given the rest of argv, under
 * the filter.  Returns only when it cannot, with the wrapper's status (2:
 * no program named; 1: refused, said on stderr). */
static inline int exec_filtered(struct sock_filter *code, unsigned short count, int argc, char **argv,
                                const char *name)
{
    if (argc < 2)
        return 2;
    if (seccomp_install(code, count) != 0) {
        fprintf(stderr, "%s: seccomp: ", name);
        perror(NULL);
        return 1;
    }
    execv(argv[1], argv + 1);
    fprintf(stderr, "%s: execv: ", name);
    perror(NULL);
    return 1;
}

#endif
