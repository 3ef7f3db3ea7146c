/* A program that limits its own address space (as ulimit -v does in a
 * shell) to 2 GiB, then takes 100 MiB with malloc and maps 100 MiB
 * itself; prints "ok" when both succeed. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

int main(void)
{
    struct rlimit limit = {2048 * MIB, 2048 * MIB};
    if (setrlimit(RLIMIT_AS, &limit) != 0)
        return 1;
    char *block = malloc(100 * MIB);
    char *region = mmap(NULL, 100 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!block || region == MAP_FAILED)
        return 2;
    memset(block, 1, MIB);
    region[0] = 1;
    return write(1, "ok\n", 3) == 3 ? 0 : 3;
}
