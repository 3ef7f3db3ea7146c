/* The monitor's own threads (the dump signal's, the watch's answers, the
 * checkpoints' writer): never the program's, so started through the real
 * pthread_create, detached, with every signal blocked, so that none meant
 * for the program's threads comes to them. */
#ifndef MPROF_OWN_THREAD_H
#define MPROF_OWN_THREAD_H

#include <stdbool.h>

/* Called first on each of them: the monitor's own, registered at start
 * while the process has one thread (so that this layer does not call up
 * into monitor.c), which makes the thread's allocations and frees, the C
 * library's at its end among them, none of the program's. */
typedef void own_thread_entry(void);
void own_thread_on_entry(own_thread_entry *entry);

/* false when the thread could not be started. */
bool own_thread_start(void *(*run)(void *));

#endif
