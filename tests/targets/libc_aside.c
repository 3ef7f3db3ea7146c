/* A process with a second mapping of its C library's file, of its second
 * page (file offset 4096, not 0), at 1 MiB: below the program and the
 * library, so that it comes first in /proc/PID/maps.  It says "ready",
 * then waits in read on stdin and answers each line with "line". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
    Dl_info library;
    if (!dladdr((void *)printf, &library) || !library.dli_fname)
        return 1;
    int fd = open(library.dli_fname, O_RDONLY | O_CLOEXEC);
    void *wanted = (void *)(1ul << 20);
    if (fd < 0 || mmap(wanted, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 4096) != wanted)
        return 2;
    close(fd);
    printf("ready\n");
    fflush(stdout);
    char text[256];
    ssize_t got;
    while ((got = read(STDIN_FILENO, text, sizeof text)) > 0)
        for (ssize_t i = 0; i < got; i++)
            if (text[i] == '\n') {
                printf("line\n");
                fflush(stdout);
            }
    return 0;
}
