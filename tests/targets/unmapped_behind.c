/* Maps 20 regions of a page side by side (map_one), unmaps all 20 with the
 * system call itself, which the monitor does not see, and maps 20 pages
 * there again, where the kernel is asked to put them (map_over, no
 * MAP_FIXED): the monitor finds the 20 regions it still keeps under that
 * mapping only after the call, more than the room it made before.  Prints
 * "same" when the kernel put the mapping where asked, and keeps it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define P ((size_t)4096)
#define PAGES 20

__attribute__((noinline)) static void map_one(char *at)
{
    if (mmap(at, P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != at) {
        perror("unmapped_behind: map_one");
        _exit(1);
    }
}

__attribute__((noinline)) static char *map_over(char *at)
{
    return mmap(at, PAGES * P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

int main(void)
{
    /* A free place for the 20 pages. */
    char *area = mmap(NULL, PAGES * P, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED || munmap(area, PAGES * P) != 0)
        return 1;
    for (size_t page = 0; page < PAGES; page++)
        map_one(area + page * P);
    if (syscall(SYS_munmap, area, PAGES * P) != 0)
        return 1;
    char *over = map_over(area);
    if (over == MAP_FAILED)
        return 1;
    over[0] = 1;
    puts(over == area ? "same" : "elsewhere");
    return 0;
}
