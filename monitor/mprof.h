/* The C API of libmprof, for programs linked against it (see libmprof(3)).
 * Allocation profiling needs none of it: linking or preloading the library
 * is enough. */
#ifndef MPROF_H
#define MPROF_H

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the data file now, as the dump signal would; the file is replaced
 * by later writes of the same process, and at exit. */
void mprof_dump(void);

#ifdef __cplusplus
}
#endif

#endif
