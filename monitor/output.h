/* Where a process's data file goes, and getting it there atomically. */
#ifndef MPROF_OUTPUT_H
#define MPROF_OUTPUT_H

#include <stdbool.h>
#include <sys/types.h>

#include "options.h"

struct output {
    char path[MPROF_PATH_MAX + 64]; /* the name, once chosen */
    char temporary[MPROF_PATH_MAX + 96];
    bool chosen;  /* path holds the name to write */
    bool named;   /* path was used by an earlier write of this process */
    bool replace; /* the root's FILE may replace an older file of that name */
    bool quiet;   /* a viewer's answer: its failures are not logged */
};

/* Chooses the name from the pattern (MPROF_OUTPUT), as output_open would. */
void output_name(struct output *output, const char *pattern, pid_t pid, bool is_root);
/* Adds text to a chosen name. */
void output_append(struct output *output, const char *text);

/* Creates the temporary file (0600, O_EXCL, so never through a symbolic
 * link) and returns its descriptor, never 0, 1 or 2, or -1 after logging
 * why. */
int output_open(struct output *output, const char *pattern, pid_t pid, bool is_root);
/* The temporary file output_open made, opened again for appending (a
 * file written as the program runs is not kept open between writes, so
 * that the program never finds a descriptor of the monitor's); -1 on
 * failure. */
int output_reopen(const struct output *output);
/* fd, or a copy of it above 2 when it is 0, 1 or 2 (closing fd): the
 * program closed those and may reopen them at any time, and a file of the
 * monitor's must not take their place, even briefly.  -1 on failure. */
int output_above_standard(int fd);
/* Renames the temporary file into place, or removes it when ok is false.
 * The first rename of a process never replaces an existing file unless it
 * is the root's own FILE; it takes FILE.1, FILE.2, ... instead. */
bool output_commit(struct output *output, int fd, bool ok);

#endif
