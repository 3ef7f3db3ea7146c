/* Test target for the leak kinds (issue 49): the program's own memory, which the kernel lists as one mapping with
 * its neighbour's, where the neighbour is the monitor's memory or a large block's own mapping.
 *
 * The kernel lists two adjacent anonymous mappings with the same permissions as one line of /proc/self/maps.  The
 * program maps a region right below each anonymous mapping it has (the monitor's memory among them), so that each
 * such line is part the program's, part another's; and right below the mappings of two large blocks.  The
 * monitor's memory holds the addresses of blocks, and a large block's the words it holds: read as roots, either
 * would make blocks reachable.
 *
 * Expected, as memcheck says (tests/e2e/test_leak_kinds.py checks it):
 *   definitely lost  drop_buffer 1 x 1000, lose_large 1 x 1 MiB
 *   indirectly lost  held_by_large 1 x 48 (only the lost large block points to it)
 *   still reachable  keep_large 1 x 1 MiB (from the global kept_large)
 * No stdio: its buffer would be one more block. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "scrub.h"

#define REGION 65536ul
#define REGIONS_MAX 256

#define LARGE (1ul << 20) /* over glibc's threshold: a mapping of its own */

void *kept_large;

/* A region of the program's right below the mapping of the large block at block. */
static void map_below(void *block) {
    uintptr_t chunk = (uintptr_t)block & ~(uintptr_t)4095;
    (void)mmap((void *)(chunk - REGION), REGION, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
}

static void *held_by_large(void) {
    return malloc(48);
}

static void lose_large(void) {
    void **volatile large = malloc(LARGE);
    large[0] = held_by_large();
    map_below(large);
}

static void keep_large(void) {
    kept_large = malloc(LARGE);
    map_below(kept_large);
}

static void drop_buffer(void) {
    char *volatile buffer = malloc(1000);
    memset(buffer, 'x', 1000);
}

static unsigned long hex(const char **cursor) {
    unsigned long value = 0;
    for (;; (*cursor)++) {
        char c = **cursor;
        if (c >= '0' && c <= '9')
            value = value << 4 | (unsigned long)(c - '0');
        else if (c >= 'a' && c <= 'f')
            value = value << 4 | (unsigned long)(c - 'a' + 10);
        else
            return value;
    }
}

/* The starts of the anonymous read-write mappings: lines "start-end rw-p 00000000 00:00 0", nothing after. */
static int anonymous_starts(unsigned long *starts) {
    static char text[1 << 20];
    static const char anonymous[] = " rw-p 00000000 00:00 0";
    int fd = open("/proc/self/maps", O_RDONLY), count = 0;
    size_t used = 0;
    ssize_t got;
    while ((got = read(fd, text + used, sizeof text - 1 - used)) > 0)
        used += (size_t)got;
    close(fd);
    text[used] = '\0';
    for (char *line = text; *line && count < REGIONS_MAX;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        const char *c = line;
        unsigned long start = hex(&c);
        if (*c == '-') {
            c++;
            hex(&c);
            if (!strncmp(c, anonymous, sizeof anonymous - 1) && strspn(c + sizeof anonymous - 1, " ") ==
                strlen(c + sizeof anonymous - 1))
                starts[count++] = start;
        }
        line = end ? end + 1 : line + strlen(line);
    }
    return count;
}

static void map_beside_each(void) {
    unsigned long starts[REGIONS_MAX];
    int count = anonymous_starts(starts);
    for (int i = 0; i < count; i++) {
        void *region = mmap((void *)(starts[i] - REGION), REGION, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        (void)region; /* taken where free: kept until exit, all zero */
    }
}

int main(void) {
    drop_buffer();
    lose_large();
    keep_large();
    map_beside_each();
    scrub();
    return 0;
}
