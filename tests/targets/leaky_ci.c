/* Leaks of known sizes for the suppression and --fail-on-leak tests:
 * keep_config 3 x 100 bytes, real_leak 5 x 1,000, the shared library's
 * lib_cache 4 x 32, and leaf_alloc 64 bytes each under six frames
 * (l1..l6) from outer_a (7 blocks) and outer_b (2 blocks), so that the
 * leak table's partial chains of five frames merge the two.  Frees 10 x 50
 * bytes.  Exits with the status given as its argument.  Built with
 * -DOWN_SUPPRESSIONS it suppresses keep_config's and outer_b's blocks
 * itself, as a program does for LeakSanitizer. */
#include <stdlib.h>

#ifdef OWN_SUPPRESSIONS
const char *__lsan_default_suppressions(void)
{
    return "# accepted\nleak:keep_config\nleak:outer_b\n";
}
#endif

void lib_cache(int count);

__attribute__((noinline)) void keep_config(void)
{
    for (int i = 0; i < 3; i++) {
        volatile void *config = malloc(100);
        (void)config;
    }
}

__attribute__((noinline)) void real_leak(void)
{
    for (int i = 0; i < 5; i++) {
        volatile void *lost = malloc(1000);
        (void)lost;
    }
}

__attribute__((noinline)) void leaf_alloc(void) { volatile void *lost = malloc(64); (void)lost; }
__attribute__((noinline)) void l6(void) { leaf_alloc(); }
__attribute__((noinline)) void l5(void) { l6(); }
__attribute__((noinline)) void l4(void) { l5(); }
__attribute__((noinline)) void l3(void) { l4(); }
__attribute__((noinline)) void l2(void) { l3(); }
__attribute__((noinline)) void l1(void) { l2(); }

__attribute__((noinline)) void outer_a(void)
{
    for (int i = 0; i < 7; i++)
        l1();
}

__attribute__((noinline)) void outer_b(void)
{
    for (int i = 0; i < 2; i++)
        l1();
}

int main(int argc, char **argv)
{
    keep_config();
    real_leak();
    lib_cache(4);
    outer_a();
    outer_b();
    for (int i = 0; i < 10; i++)
        free(malloc(50));
    return argc > 1 ? atoi(argv[1]) : 0;
}
