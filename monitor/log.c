/* The monitor's only output of its own (log.h): a line for a failure, to
 * mprof run's record or else stderr, and on stderr what was asked for
 * (MPROF_VERBOSE). */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

/* Set while the process has one thread (log_set_sink), read by any. */
static log_sink *problem_sink;

void log_set_sink(log_sink *sink)
{
    problem_sink = sink;
}

static void say(bool problem, const char *first, va_list pieces)
{
    char line[1024];
    const char prefix[] = "mprof: ";
    size_t start = sizeof prefix - 1, used = start;
    memcpy(line, prefix, start);
    for (const char *piece = first; piece; piece = va_arg(pieces, const char *)) {
        size_t length = strlen(piece);
        if (length > sizeof line - 1 - used)
            length = sizeof line - 1 - used;
        memcpy(line + used, piece, length);
        used += length;
    }
    if (problem && problem_sink) {
        line[used] = '\0';
        problem_sink(line + start);
        return;
    }
    line[used++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, used);
    (void)ignored;
}

void log_line(const char *first, ...)
{
    va_list pieces;
    va_start(pieces, first);
    say(true, first, pieces);
    va_end(pieces);
}

void log_verbose(const char *first, ...)
{
    va_list pieces;
    va_start(pieces, first);
    say(false, first, pieces);
    va_end(pieces);
}

/* Set by the first failure; any thread. */
static atomic_bool failure_reported;

bool log_first_failure(void)
{
    return !atomic_exchange(&failure_reported, true);
}

void log_forget_failure(void)
{
    atomic_store(&failure_reported, false);
}

char *format_u64(char *buffer, unsigned long long value)
{
    char digits[21];
    int count = 0;
    do {
        digits[count++] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    for (int i = 0; i < count; i++)
        buffer[i] = digits[count - 1 - i];
    buffer[count] = '\0';
    return buffer;
}
