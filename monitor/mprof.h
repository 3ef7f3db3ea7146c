/* The C API of libmprof, for programs linked against it (see libmprof(3)).
 * Allocation profiling needs none of it: linking or preloading the library
 * is enough. */
#ifndef MPROF_H
#define MPROF_H

#ifdef __cplusplus
extern "C" {
#endif

/* Writes a snapshot now, as the dump signal would, into a file of its own
 * (FILE.snapN, N counting from 1); the data file itself is still written
 * at exit. */
void mprof_dump(void);

#ifdef __cplusplus
}
#endif

#endif
