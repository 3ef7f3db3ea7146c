/* The monitor's own threads (the dump signal's, the watch's answers, the
 * checkpoints' writer): never the program's, so started through the real
 * pthread_create, detached, with every signal blocked, so that none meant
 * for the program's threads comes to them. */
#ifndef MPROF_OWN_THREAD_H
#define MPROF_OWN_THREAD_H

#include <stdbool.h>

/* false when the thread could not be started. */
bool own_thread_start(void *(*run)(void *));

#endif
