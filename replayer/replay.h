/* What the replayer's files share: failing with one line, and the three
 * subcommands. */
#ifndef MPROF_REPLAY_H
#define MPROF_REPLAY_H

#include <stdint.h>
#include <stdio.h>

#include "prepared.h"

/* "mprof-replay: FILE: problem" on stderr, then exit(status). */
_Noreturn void fail(int status, const char *file, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes the prepared file atomically (temporary name, 0600, O_EXCL). */
void prepared_write(const char *path, const struct prepared_header *header, const struct prepared_thread *threads,
                    const struct prepared_event *events);

void figures_print(FILE *out, const struct prepared_figures *figures);

int prepare_main(const char *trace, const char *out);
int synthetic_main(const char *out, uint64_t operations, uint64_t seed, uint64_t max_size);
int run_main(const char *prepared, int null_allocator, int recorded_order, unsigned samples);

#endif
