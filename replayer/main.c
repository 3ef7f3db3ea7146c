/* mprof-replay: prepares a trace, makes a synthetic workload, or plays a
 * prepared file back against the malloc in effect (see mprof(1), mprof
 * replay, which drives it).  Also what the subcommands share: failing in
 * one line, writing the prepared file, printing the figures. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay.h"

static const char usage[] = "usage: mprof-replay prepare TRACE OUT\n"
                            "       mprof-replay synthetic OUT [--operations N] [--seed S] [--max-size M]\n"
                            "       mprof-replay run PREPARED [--null] [--order threads|recorded] [--samples N]\n";

/* The temporary prepared file, removed if anything fails. */
static char temporary[4096];

void fail(int status, const char *file, const char *format, ...)
{
    char message[1024];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(message, sizeof message, format, arguments);
    va_end(arguments);
    for (char *c = message; *c; c++)
        if (*c == '\n')
            *c = ' ';
    if (temporary[0])
        unlink(temporary);
    fprintf(stderr, "mprof-replay: %s: %s\n", file, message);
    exit(status);
}

static void write_all(int fd, const void *bytes, size_t size, const char *path)
{
    const char *at = bytes;
    while (size) {
        ssize_t written = write(fd, at, size);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            fail(2, path, "%s", strerror(errno));
        at += written;
        size -= (size_t)written;
    }
}

void prepared_write(const char *path, const struct prepared_header *header, const struct prepared_thread *threads,
                    const struct prepared_event *events)
{
    snprintf(temporary, sizeof temporary, "%s.tmp.%d", path, (int)getpid());
    int fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        temporary[0] = '\0';
        fail(2, path, "%s", strerror(errno));
    }
    write_all(fd, header, sizeof *header, path);
    write_all(fd, threads, header->threads * sizeof *threads, path);
    write_all(fd, events, header->events * sizeof *events, path);
    if (close(fd) != 0 || rename(temporary, path) != 0)
        fail(2, path, "%s", strerror(errno));
    temporary[0] = '\0';
}

void figures_print(FILE *out, const struct prepared_figures *f)
{
    fprintf(out,
            "{\"events\": %" PRIu64 ", \"threads\": %" PRIu64 ", \"allocations\": %" PRIu64 ", \"frees\": %" PRIu64
            ", \"reallocs\": %" PRIu64 ", \"bytes_allocated\": %" PRIu64 ", \"peak_live_bytes\": %" PRIu64
            ", \"peak_live_blocks\": %" PRIu64 ", \"unmatched_frees\": %" PRIu64 ", \"duration_ns\": %" PRIu64
            ", \"max_size\": %" PRIu64 ", \"live_digest\": \"%016" PRIx64 "\"}\n",
            f->events, f->threads, f->allocations, f->frees, f->reallocs, f->bytes_allocated, f->peak_live_bytes,
            f->peak_live_blocks, f->unmatched_frees, f->duration_ns, f->max_size, f->live_digest);
}

static uint64_t number(const char *text, const char *option)
{
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno || !*text || *end || text[0] == '-')
        fail(2, option, "not a number: %s", text);
    return value;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "prepare") && argc == 4)
        return prepare_main(argv[2], argv[3]);
    if (argc >= 3 && !strcmp(argv[1], "synthetic")) {
        uint64_t operations = 5000000, seed = 1, max_size = 1000;
        for (int i = 3; i < argc; i += 2) {
            if (i + 1 >= argc)
                fail(2, argv[i], "needs a value");
            uint64_t value = number(argv[i + 1], argv[i]);
            if (!strcmp(argv[i], "--operations"))
                operations = value;
            else if (!strcmp(argv[i], "--seed"))
                seed = value;
            else if (!strcmp(argv[i], "--max-size") && value >= 1)
                max_size = value;
            else
                fail(2, argv[i], "unknown option or value");
        }
        return synthetic_main(argv[2], operations, seed, max_size);
    }
    if (argc >= 3 && !strcmp(argv[1], "run")) {
        int null_allocator = 0, recorded = 0;
        unsigned samples = 1000;
        for (int i = 3; i < argc; i++) {
            if (!strcmp(argv[i], "--null"))
                null_allocator = 1;
            else if (!strcmp(argv[i], "--order=recorded"))
                recorded = 1;
            else if (!strcmp(argv[i], "--order=threads"))
                continue;
            else if (!strcmp(argv[i], "--order") && i + 1 < argc && !strcmp(argv[i + 1], "recorded"))
                recorded = 1, i++;
            else if (!strcmp(argv[i], "--order") && i + 1 < argc && !strcmp(argv[i + 1], "threads"))
                i++;
            else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
                samples = (unsigned)number(argv[++i], "--samples");
            else
                fail(2, argv[i], "unknown option");
        }
        return run_main(argv[2], null_allocator, recorded, samples ? samples : 1);
    }
    fputs(usage, stderr);
    return 2;
}
