/* Mappings made over the program's own regions, and a file's mapping
 * grown: what is unmapped or replaced is no longer counted, and nothing
 * that is no region is counted as one.
 *
 *   grow_file     a page of a file (the program's own) mapped and grown to
 *                 1 MiB with mremap: a file's mapping, never counted; kept.
 *   fixed_over    8 pages mapped, 2 pages mapped anew over pages 2-3 with
 *                 MAP_FIXED, then all 8 unmapped.
 *   short_fixed   4 pages mapped, 100 bytes mapped with MAP_FIXED over the
 *                 first (the kernel replaces the whole page), then all 4
 *                 unmapped.
 *   remap_over    two regions of 4 pages; the first moved over the second
 *                 with mremap MREMAP_MAYMOVE | MREMAP_FIXED, then unmapped.
 *   file_over     4 pages mapped, the file mapped over the first with
 *                 MAP_FIXED, then all 4 unmapped.
 *
 * Counted: 8 + 2 + 4 + 1 + 4 + 4 + 4 + 4 pages mapped (mremap's 4 among
 * them), every one of them unmapped or replaced; 7 mmap calls, 1 mremap. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096
#define ANONYMOUS (MAP_PRIVATE | MAP_ANONYMOUS)

__attribute__((noinline)) static char *pages(size_t count)
{
    return mmap(NULL, count * PAGE, PROT_READ | PROT_WRITE, ANONYMOUS, -1, 0);
}

__attribute__((noinline)) static void grow_file(int fd)
{
    char *text = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
    mremap(text, PAGE, 256 * PAGE, MREMAP_MAYMOVE);
}

__attribute__((noinline)) static void fixed_over(void)
{
    char *region = pages(8);
    mmap(region + 2 * PAGE, 2 * PAGE, PROT_READ | PROT_WRITE, ANONYMOUS | MAP_FIXED, -1, 0);
    munmap(region, 8 * PAGE);
}

__attribute__((noinline)) static void short_fixed(void)
{
    char *region = pages(4);
    mmap(region, 100, PROT_READ | PROT_WRITE, ANONYMOUS | MAP_FIXED, -1, 0);
    munmap(region, 4 * PAGE);
}

__attribute__((noinline)) static void remap_over(void)
{
    char *moved = pages(4), *target = pages(4);
    mremap(moved, 4 * PAGE, 4 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, target);
    munmap(target, 4 * PAGE);
}

__attribute__((noinline)) static void file_over(int fd)
{
    char *region = pages(4);
    mmap(region, PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
    munmap(region, 4 * PAGE);
}

int main(int argc, char **argv)
{
    (void)argc;
    int fd = open(argv[0], O_RDONLY);
    if (fd < 0)
        return 1;
    grow_file(fd);
    fixed_over();
    short_fixed();
    remap_over();
    file_over(fd);
    close(fd);
    return write(1, "ok\n", 3) == 3 ? 0 : 1;
}
