/* The memalign family: each block's alignment is checked, every call is
 * freed, and the invalid requests must fail exactly as libc says. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "memalign: %s\n", what);
        failures++;
    }
}

static int aligned(void *block, size_t alignment)
{
    return block && (uintptr_t)block % alignment == 0;
}

int main(void)
{
    long page = sysconf(_SC_PAGESIZE);
    void *a = NULL;
    expect(posix_memalign(&a, 64, 100) == 0 && aligned(a, 64), "posix_memalign 64");
    void *b = aligned_alloc(128, 256);
    expect(aligned(b, 128), "aligned_alloc 128");
    void *c = memalign(256, 300);
    expect(aligned(c, 256), "memalign 256");
    void *d = valloc(1000);
    expect(aligned(d, (size_t)page), "valloc page");
    void *e = pvalloc(1000);
    expect(aligned(e, (size_t)page), "pvalloc page");
    void *invalid = (void *)1;
    expect(posix_memalign(&invalid, 3, 10) == EINVAL, "posix_memalign odd alignment is EINVAL");
    expect(invalid == (void *)1, "failed posix_memalign left the pointer alone");
    expect(malloc_usable_size(a) >= 100, "malloc_usable_size of an aligned block");
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
    return failures;
}
