/* One-line messages, formatted without malloc or stdio.  A problem goes to
 * a sink when one is registered (mprof run's record, which mprof run says
 * after the program), and only otherwise to stderr: under mprof run the
 * program's descriptors never see the monitor's words. */
#ifndef MPROF_LOG_H
#define MPROF_LOG_H

#include <stdbool.h>
#include <stddef.h>

/* Takes a problem's line, "mprof: " and the newline left out. */
typedef void log_sink(const char *line);

/* Registers sink, or with NULL goes back to stderr.  Called while the
 * process (or fork child) has one thread. */
void log_set_sink(log_sink *sink);

/* A problem: "mprof: " and the pieces, joined, and a newline, to the sink
 * or stderr.  The list of pieces ends with NULL. */
void log_line(const char *first, ...) __attribute__((sentinel));

/* What the user asked to hear (MPROF_VERBOSE): always on stderr. */
void log_verbose(const char *first, ...) __attribute__((sentinel));

/* True the first time in this process: a failure to write data files is
 * reported once, however many checkpoints fail after it. */
bool log_first_failure(void);
/* In a fork child: its own first failure is reported too. */
void log_forget_failure(void);

/* Decimal text of value in buffer (at least 21 bytes); returns buffer. */
char *format_u64(char *buffer, unsigned long long value);

#endif
