/* A thread that waits in a system call with a vector register in use, as
 * code that makes the system call itself may (the C library's wrappers
 * leave none: the ABI has the caller save them): for each byte read from
 * stdin, by a read made with the syscall instruction while ymm7 holds four
 * doubles, it answers "ymm ok" if ymm7 holds them still after, else "ymm
 * changed".  Built with -mavx. */
#include <stdio.h>
#include <string.h>

int main(void)
{
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        char byte;
        long got;
        double in[4] = {1.5, 2.5, 3.5, 4.5}, out[4] = {0};
        __asm__ volatile("vmovupd (%[in]), %%ymm7\n\t"
                         "xor %%eax, %%eax\n\t" /* read(0, &byte, 1) */
                         "xor %%edi, %%edi\n\t"
                         "mov %[byte], %%rsi\n\t"
                         "mov $1, %%edx\n\t"
                         "syscall\n\t"
                         "mov %%rax, %[got]\n\t"
                         "vmovupd %%ymm7, (%[out])\n\t"
                         : [got] "=r"(got)
                         : [in] "r"(in), [out] "r"(out), [byte] "r"(&byte)
                         : "rax", "rdi", "rsi", "rdx", "rcx", "r11", "memory", "xmm7");
        if (got <= 0)
            return 0;
        printf("%s\n", memcmp(in, out, sizeof in) ? "ymm changed" : "ymm ok");
        fflush(stdout);
    }
}
