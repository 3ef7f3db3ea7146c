/* Starting a thread of the monitor's own (see own_thread.h). */
#include "own_thread.h"

#include <pthread.h>
#include <signal.h>

#include "real.h"

bool own_thread_start(void *(*run)(void *))
{
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int error = real.pthread_create(&thread, &attributes, run, NULL);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    pthread_attr_destroy(&attributes);
    return error == 0;
}
