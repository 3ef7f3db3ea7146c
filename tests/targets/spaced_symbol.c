/* A C function whose symbol holds a space, as an assembler name gives one
 * (GNU as takes a quoted name): 3 blocks of 100 bytes, never freed. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) char *leaky(size_t size) __asm__("\"leaky_function free\"");

__attribute__((noinline)) char *leaky(size_t size)
{
    char *block = malloc(size);
    memset(block, 1, size);
    return block;
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        leaky(100);
    return 0;
}
