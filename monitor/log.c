/* The monitor's only output of its own: one line on stderr, and only for
 * a failure or when asked (MPROF_VERBOSE). */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

void log_line(const char *first, ...)
{
    char line[1024];
    size_t used = 0;
    const char prefix[] = "mprof: ";
    memcpy(line, prefix, sizeof prefix - 1);
    used = sizeof prefix - 1;
    va_list pieces;
    va_start(pieces, first);
    for (const char *piece = first; piece; piece = va_arg(pieces, const char *)) {
        size_t length = strlen(piece);
        if (length > sizeof line - 1 - used)
            length = sizeof line - 1 - used;
        memcpy(line + used, piece, length);
        used += length;
    }
    va_end(pieces);
    line[used++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, used);
    (void)ignored;
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
