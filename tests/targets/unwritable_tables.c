/* Runs a program (argv[1], given the rest of the arguments) where mprotect
 * fails with EPERM whenever it asks for write access, as under a seccomp
 * profile that forbids making memory writable again: the C library's
 * tables of imported functions (its GOT, in RELRO, read-only after it was
 * loaded) can then not be routed by mprof attach, while the program's own
 * lazily bound ones (writable) can. */
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "seccomp_filter.h"

int main(int argc, char **argv)
{
    struct sock_filter code[] = {
        SECCOMP_LOAD_NUMBER,
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mprotect, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_WRITE, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    return exec_filtered(code, sizeof code / sizeof *code, argc, argv, "unwritable_tables");
}
