/* Starting a thread of the monitor's own (see own_thread.h). */
#include "own_thread.h"

#include <pthread.h>
#include <signal.h>

#include "real.h"

/* Written by own_thread_on_entry only, while the process has one thread. */
static own_thread_entry *on_entry;

void own_thread_on_entry(own_thread_entry *entry)
{
    on_entry = entry;
}

static void *enter(void *run)
{
    if (on_entry)
        on_entry();
    return ((void *(*)(void *))run)(NULL);
}

bool own_thread_start(void *(*run)(void *))
{
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int error = real.pthread_create(&thread, &attributes, enter, (void *)run);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    pthread_attr_destroy(&attributes);
    return error == 0;
}
