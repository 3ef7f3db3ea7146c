/* A thread that waits in a system call with vector registers in use, as
 * code that makes the system call itself may (the C library's wrappers
 * leave none: the ABI has the caller save them): for each byte read from
 * stdin, by a read made with the syscall instruction while ymm7 holds four
 * doubles and xmm12 two others, it answers "ymm7 ok xmm12 ok", each "ok"
 * "changed" when the register does not hold its numbers still after.
 * Built with -mavx; with -DAVX512_AT_REST too, it first puts the AVX-512
 * components (opmask, ZMM_Hi256, Hi16_ZMM), which the C library's string
 * functions leave in use on such a CPU, back in their initial state, so
 * that AVX's is the last component in use across the system call. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef AVX512_AT_REST
static void avx512_at_rest(void)
{
    static unsigned char area[16384] __attribute__((aligned(64)));
    memset(area, 0, sizeof area);
    __asm__ volatile("xsave (%0)" : : "r"(area), "a"(~0u), "d"(~0u) : "memory");
    uint64_t in_use;
    memcpy(&in_use, area + 512, sizeof in_use); /* the header's XSTATE_BV */
    in_use &= ~(uint64_t)0xe0;
    memcpy(area + 512, &in_use, sizeof in_use);
    __asm__ volatile("xrstor (%0)" : : "r"(area), "a"(~0u), "d"(~0u) : "memory");
}
#else
static void avx512_at_rest(void)
{
}
#endif

int main(void)
{
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        char byte;
        long got;
        double in[4] = {1.5, 2.5, 3.5, 4.5}, out[4] = {0}, in12[2] = {5.5, 6.5}, out12[2] = {0};
        avx512_at_rest();
        __asm__ volatile("vmovupd (%[in]), %%ymm7\n\t"
                         "vmovupd (%[in12]), %%xmm12\n\t"
                         "xor %%eax, %%eax\n\t" /* read(0, &byte, 1) */
                         "xor %%edi, %%edi\n\t"
                         "mov %[byte], %%rsi\n\t"
                         "mov $1, %%edx\n\t"
                         "syscall\n\t"
                         "mov %%rax, %[got]\n\t"
                         "vmovupd %%ymm7, (%[out])\n\t"
                         "vmovupd %%xmm12, (%[out12])\n\t"
                         : [got] "=r"(got)
                         : [in] "r"(in), [out] "r"(out), [in12] "r"(in12), [out12] "r"(out12), [byte] "r"(&byte)
                         : "rax", "rdi", "rsi", "rdx", "rcx", "r11", "memory", "xmm7", "xmm12");
        if (got <= 0)
            return 0;
        printf("ymm7 %s xmm12 %s\n", memcmp(in, out, sizeof in) ? "changed" : "ok",
               memcmp(in12, out12, sizeof in12) ? "changed" : "ok");
        fflush(stdout);
    }
}
