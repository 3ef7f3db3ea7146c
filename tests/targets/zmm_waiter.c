/* vector_waiter's AVX-512 kin: a thread that waits in a system call with
 * state of the three AVX-512 components in use, the ones past AVX's in the
 * XSAVE image: for each byte read from stdin, by a read made with the
 * syscall instruction while zmm3's upper half (ZMM_Hi256), zmm20
 * (Hi16_ZMM) and k2 (opmask) hold values, it answers "zmm3 ok zmm20 ok k2
 * ok", each "ok" "changed" when the register does not hold its value
 * still after.  Built with -mavx512f. */
#include <stdio.h>
#include <string.h>

int main(void)
{
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        char byte;
        long got;
        double in3[8] = {1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5}, out3[8] = {0};
        double in20[8] = {-1.25, 2e10, -3e-10, 4.75, 1e100, -6.5, 7.125, -8e-100}, out20[8] = {0};
        unsigned short in2 = 0xa5c3, out2 = 0;
        __asm__ volatile("vmovupd (%[in3]), %%zmm3\n\t"
                         "vmovupd (%[in20]), %%zmm20\n\t"
                         "kmovw %[in2], %%k2\n\t"
                         "xor %%eax, %%eax\n\t" /* read(0, &byte, 1) */
                         "xor %%edi, %%edi\n\t"
                         "mov %[byte], %%rsi\n\t"
                         "mov $1, %%edx\n\t"
                         "syscall\n\t"
                         "mov %%rax, %[got]\n\t"
                         "vmovupd %%zmm3, (%[out3])\n\t"
                         "vmovupd %%zmm20, (%[out20])\n\t"
                         "kmovw %%k2, %[out2]\n\t"
                         : [got] "=r"(got), [out2] "=m"(out2)
                         : [in3] "r"(in3), [out3] "r"(out3), [in20] "r"(in20), [out20] "r"(out20), [in2] "m"(in2),
                           [byte] "r"(&byte)
                         : "rax", "rdi", "rsi", "rdx", "rcx", "r11", "memory", "xmm3", "xmm20", "k2");
        if (got <= 0)
            return 0;
        printf("zmm3 %s zmm20 %s k2 %s\n", memcmp(in3, out3, sizeof in3) ? "changed" : "ok",
               memcmp(in20, out20, sizeof in20) ? "changed" : "ok", in2 != out2 ? "changed" : "ok");
        fflush(stdout);
    }
}
