/* Prints what a program can see of its allocator and of its own process:
 * errno after every allocator call (set to EDOM before each; a success must
 * leave it, a failure must say ENOMEM), malloc_usable_size and alignments,
 * its open descriptors and its threads.  The same lines with and without
 * the monitor.  ROUNDS repeats the allocator calls, so that checkpoints are
 * written while they run. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errno_changes;

static void check(const char *call, int expected)
{
    if (errno != expected && errno_changes++ < 20)
        printf("%s left errno %d (%s), not %d\n", call, errno, strerror(errno), expected);
    errno = EDOM;
}

static void allocator_calls(void)
{
    errno = EDOM;
    void *block = malloc(100);
    check("malloc", EDOM);
    block = realloc(block, 5000);
    check("realloc up", EDOM);
    block = realloc(block, 10);
    check("realloc down", EDOM);
    free(block);
    check("free", EDOM);
    free(NULL);
    check("free(NULL)", EDOM);
    block = calloc(10, 10);
    check("calloc", EDOM);
    block = reallocarray(block, 20, 20);
    check("reallocarray", EDOM);
    free(block);
    void *aligned;
    if (posix_memalign(&aligned, 64, 100) == 0)
        free(aligned);
    check("posix_memalign", EDOM);
    free(aligned_alloc(128, 256));
    check("aligned_alloc", EDOM);
    free(memalign(256, 10));
    check("memalign", EDOM);
    free(valloc(10));
    check("valloc", EDOM);
    if (malloc(SIZE_MAX / 2))
        puts("malloc(SIZE_MAX / 2) succeeded");
    check("failing malloc", ENOMEM);
    if (calloc(SIZE_MAX / 2, 4))
        puts("overflowing calloc succeeded");
    check("failing calloc", ENOMEM);
    block = malloc(8);
    if (realloc(block, SIZE_MAX / 2))
        puts("realloc(SIZE_MAX / 2) succeeded");
    check("failing realloc", ENOMEM);
    free(block);
    check("free after a failed realloc", EDOM);
}

/* glibc's own account of a block: its chunk's size word, less the word
 * before the next chunk's that the block may use.  Which chunk a request
 * gets depends on the heap's history, so the size itself is not compared. */
static bool as_glibc_says(void *block)
{
    size_t chunk = ((size_t *)block)[-1] & ~(size_t)7;
    bool mapped = ((size_t *)block)[-1] & 2;
    return malloc_usable_size(block) == chunk - (mapped ? 16 : 8);
}

static void sizes_and_alignments(void)
{
    for (size_t size = 0; size <= 300000; size = size * 3 + 7) {
        void *block = malloc(size);
        printf("malloc(%zu): usable %d, as glibc's chunk says %d, address mod 16 %zu\n", size,
               malloc_usable_size(block) >= size, as_glibc_says(block), (size_t)((uintptr_t)block % 16));
        free(block);
    }
    for (size_t alignment = 16; alignment <= 4096; alignment *= 4) {
        void *block = memalign(alignment, 40);
        void *other = aligned_alloc(alignment, alignment * 2);
        void *third;
        int error = posix_memalign(&third, alignment, 24);
        printf("alignment %zu: %zu %zu %zu (posix_memalign %d), usable %d, as glibc's chunk says %d\n",
               alignment, (size_t)((uintptr_t)block % alignment), (size_t)((uintptr_t)other % alignment),
               (size_t)((uintptr_t)third % alignment), error, malloc_usable_size(other) >= alignment * 2,
               as_glibc_says(other));
        free(block);
        free(other);
        free(third);
    }
    printf("posix_memalign with alignment 24: %d\n", posix_memalign(&(void *){NULL}, 24, 8));
}

/* A thread's name, as /proc/self/task/TID/comm gives it. */
static void print_thread_name(const char *tid)
{
    char path[64], name[32] = "?";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", tid);
    FILE *comm = fopen(path, "re");
    if (comm) {
        if (fgets(name, sizeof name, comm))
            name[strcspn(name, "\n")] = '\0';
        fclose(comm);
    }
    printf(" %s", name);
}

/* The entries of /proc/self/fd (descriptors) or /proc/self/task (the
 * threads' names), then their count. */
static void list(const char *directory, const char *what)
{
    DIR *listing = opendir(directory);
    if (!listing)
        return;
    int count = 0;
    printf("%s:", what);
    struct dirent *entry;
    while ((entry = readdir(listing)))
        if (entry->d_name[0] != '.') {
            count++;
            if (!strcmp(what, "descriptors"))
                printf(" %s", entry->d_name);
            else
                print_thread_name(entry->d_name);
        }
    printf(" (%d)\n", count);
    closedir(listing);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 1;
    list("/proc/self/fd", "descriptors");
    list("/proc/self/task", "threads");
    for (int i = 0; i < rounds; i++)
        allocator_calls();
    printf("errno changed %d times in %d rounds\n", errno_changes, rounds);
    sizes_and_alignments();
    list("/proc/self/fd", "descriptors");
    list("/proc/self/task", "threads");
    return 0;
}
