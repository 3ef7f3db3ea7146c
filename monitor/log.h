/* One-line messages on stderr, formatted without malloc or stdio. */
#ifndef MPROF_LOG_H
#define MPROF_LOG_H

/* Writes "mprof: " and the pieces, joined, and a newline.  The list of
 * pieces ends with NULL. */
void log_line(const char *first, ...) __attribute__((sentinel));

/* Decimal text of value in buffer (at least 21 bytes); returns buffer. */
char *format_u64(char *buffer, unsigned long long value);

#endif
