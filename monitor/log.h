/* One-line messages on stderr, formatted without malloc or stdio. */
#ifndef MPROF_LOG_H
#define MPROF_LOG_H

#include <stdbool.h>

/* Writes "mprof: " and the pieces, joined, and a newline.  The list of
 * pieces ends with NULL. */
void log_line(const char *first, ...) __attribute__((sentinel));

/* True the first time in this process: a failure to write data files is
 * reported once, however many checkpoints fail after it. */
bool log_first_failure(void);
/* In a fork child: its own first failure is reported too. */
void log_forget_failure(void);

/* Decimal text of value in buffer (at least 21 bytes); returns buffer. */
char *format_u64(char *buffer, unsigned long long value);

#endif
