/* A process whose only thread never makes a system call after it says
 * "ready": mprof-inject finds no thread of it at a safe point. */
#include <stdio.h>

int main(void)
{
    puts("ready");
    fflush(stdout);
    for (volatile unsigned long turns = 0;; turns++)
        ;
}
