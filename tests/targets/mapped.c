/* Memory mapped by the program itself: three anonymous regions of 10, 8 and
 * 3 pages from map_pages; the first unmapped whole, the second's first and
 * last two pages unmapped (4 pages stay), the third grown to 6 pages with
 * mremap (it stays); a file mapped and unmapped (not counted); a block of
 * 1 MiB from malloc, which glibc maps itself (counted once, as malloc's);
 * and the break moved up by 8 KiB and back down by 4 KiB with sbrk. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096

__attribute__((noinline)) static char *map_pages(size_t pages)
{
    return mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

__attribute__((noinline)) static char *grow_region(char *region)
{
    return mremap(region, 3 * PAGE, 6 * PAGE, MREMAP_MAYMOVE);
}

__attribute__((noinline)) static void read_file(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    void *text = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
    if (text != MAP_FAILED)
        munmap(text, PAGE);
    close(fd);
}

__attribute__((noinline)) static void move_break(void)
{
    sbrk(2 * PAGE);
    sbrk(-PAGE);
}

int main(int argc, char **argv)
{
    (void)argc;
    char *first = map_pages(10), *second = map_pages(8), *third = map_pages(3);
    munmap(first, 10 * PAGE);
    munmap(second, 2 * PAGE);
    munmap(second + 6 * PAGE, 2 * PAGE);
    grow_region(third);
    read_file(argv[0]);
    free(malloc(1 << 20));
    move_break();
    return 0;
}
