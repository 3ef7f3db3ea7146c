/* Allocates from the executable's .preinit_array, which runs before any
 * library's initialiser, the C library's too (environ is not set yet): the
 * monitor starts there.  early_blocks allocates 3 blocks of 1000 bytes and
 * frees one; main allocates 2 of 500 and frees both. */
#include <stdlib.h>
#include <unistd.h>

static void *kept[2];

__attribute__((noinline)) static void early_blocks(void)
{
    void *dropped = malloc(1000);
    kept[0] = malloc(1000);
    kept[1] = malloc(1000);
    free(dropped);
}

static void before_libc(int argc, char **argv, char **envp)
{
    (void)argc, (void)argv, (void)envp;
    early_blocks();
}

__attribute__((section(".preinit_array"), used)) static void (*const run_before_libc)(int, char **, char **) =
    before_libc;

int main(void)
{
    void *first = malloc(500), *second = malloc(500);
    free(first);
    free(second);
    /* Not stdio, whose buffer would be one more block. */
    return write(STDOUT_FILENO, "ok\n", kept[0] && kept[1] ? 3 : 0) == 3 ? 0 : 1;
}
