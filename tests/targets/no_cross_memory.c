/* Runs a program (argv[1], given the rest of the arguments) where
 * process_vm_readv and process_vm_writev fail with ENOSYS, as on a kernel
 * built without CONFIG_CROSS_MEMORY_ATTACH or under a seccomp profile that
 * denies them: mprof-inject must then read and write the process's memory
 * with ptrace alone. */
#include <errno.h>
#include <sys/syscall.h>

#include "seccomp_filter.h"

int main(int argc, char **argv)
{
    struct sock_filter code[] = {
        SECCOMP_LOAD_NUMBER,
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
    };
    return exec_filtered(code, sizeof code / sizeof *code, argc, argv, "no_cross_memory");
}
