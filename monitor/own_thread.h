/* The monitor's own threads (the dump signal's, the watch's answers): never
 * the program's, so started through the real pthread_create, with every
 * signal blocked, so that none meant for the program's threads comes to
 * them, on stacks of the monitor's own memory. */
#ifndef MPROF_OWN_THREAD_H
#define MPROF_OWN_THREAD_H

#include <stdbool.h>

/* false when the thread could not be started. */
bool own_thread_start(void *(*run)(void *));

/* In a fork child, where the parent's threads do not exist. */
void own_thread_fork_child(void);

#endif
