/* Linked with early_mapper.c's library, whose constructor mapped 3 pages
 * before main: main unmaps the first and keeps the other two.  Nothing is
 * allocated. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>

#define P ((size_t)4096)

extern char *early_region;

int main(void)
{
    if (early_region == MAP_FAILED) {
        fputs("early_mapping: the library's mmap failed\n", stderr);
        return 1;
    }
    early_region[0] = early_region[2 * P] = 1;
    if (munmap(early_region, P) != 0) {
        perror("early_mapping: munmap");
        return 1;
    }
    puts("ok");
    return 0;
}
