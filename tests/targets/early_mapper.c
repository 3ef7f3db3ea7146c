/* A library whose constructor maps 3 pages (early_region) before the
 * program starts: a library the executable links is initialised before
 * the libraries preloaded (LD_PRELOAD), the monitor among them, so that
 * mmap is the first call of the process's to reach the monitor, which
 * starts on it.  Built with -shared for tests/targets/early_mapping.c. */
#define _GNU_SOURCE
#include <stddef.h>
#include <sys/mman.h>

#define P ((size_t)4096)

char *early_region = MAP_FAILED;

__attribute__((noinline)) static void map_early(void)
{
    early_region = mmap(NULL, 3 * P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

__attribute__((constructor)) static void early(void)
{
    map_early();
}
