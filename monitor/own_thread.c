/* Starting a thread of the monitor's own (see own_thread.h). */
#include "own_thread.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "arena.h"
#include "lock.h"
#include "real.h"

/* A stack glibc maps itself goes where the kernel chooses, often a hole
 * the program just made and will unmap again; the monitor's threads run
 * on stacks of its own reserved memory (arena.h) instead.  A stack is used
 * again once its thread has been joined: the threads are joinable, and each
 * start joins those that have ended. */
#define STACK_SIZE ((size_t)2 << 20)
#define GUARD_SIZE ((size_t)4096)
#define STACKS 4

enum stack_state {
    STACK_FREE,
    STACK_STARTING, /* its thread being made: no id yet */
    STACK_RUNNING,  /* its thread started, not yet joined */
};

/* Guarded by stacks_lock; a fork child forgets the threads (own_thread.h). */
static spinlock_t stacks_lock = SPINLOCK_INIT;
static struct {
    void *stack; /* NULL: none mapped yet */
    pthread_t thread;
    enum stack_state state;
} stacks[STACKS];

/* A stack for a new thread, marked starting, or -1 when all are taken;
 * the lock held. */
static int free_stack(void)
{
    for (int i = 0; i < STACKS; i++)
        if (stacks[i].state == STACK_RUNNING && pthread_tryjoin_np(stacks[i].thread, NULL) == 0)
            stacks[i].state = STACK_FREE;
    for (int i = 0; i < STACKS; i++) {
        if (stacks[i].state != STACK_FREE)
            continue;
        if (!stacks[i].stack) {
            char *stack = region_map(STACK_SIZE);
            if (!stack)
                return -1;
            /* The lowest page faults instead of running into other memory. */
            mprotect(stack, GUARD_SIZE, PROT_NONE);
            stacks[i].stack = stack;
        }
        stacks[i].state = STACK_STARTING;
        return i;
    }
    return -1;
}

/* Written by own_thread_hooks only, while the process has one thread. */
static own_thread_hook *on_starting, *on_entry;

void own_thread_hooks(own_thread_hook *starting, own_thread_hook *entry)
{
    on_starting = starting;
    on_entry = entry;
}

static void *enter(void *argument)
{
    const struct own_thread *thread = argument;
    if (on_entry)
        on_entry();
    return thread->run(NULL);
}

bool own_thread_start(const struct own_thread *own)
{
    if (on_starting)
        on_starting();
    spin_lock(&stacks_lock);
    int slot = free_stack();
    spin_unlock(&stacks_lock);
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    /* Without a stack of its own (a program whose static TLS outgrows it,
     * or out of memory), glibc's, and no join. */
    if (slot < 0 || pthread_attr_setstack(&attributes, (char *)stacks[slot].stack + GUARD_SIZE,
                                          STACK_SIZE - GUARD_SIZE) != 0)
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    /* A new thread has its creator's name from its first instant: named
     * after, it would show the program's name until it first runs.  No
     * handler of the program's runs meanwhile to see this thread's. */
    char own_name[16] = "";
    prctl(PR_GET_NAME, own_name);
    prctl(PR_SET_NAME, own->name);
    pthread_t thread;
    int error = real.pthread_create(&thread, &attributes, enter, (void *)own);
    if (error && slot >= 0) {
        /* glibc refuses a stack too small for the program's static TLS. */
        pthread_attr_destroy(&attributes);
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        error = real.pthread_create(&thread, &attributes, enter, (void *)own);
        spin_lock(&stacks_lock);
        stacks[slot].state = STACK_FREE;
        spin_unlock(&stacks_lock);
        slot = -1;
    }
    prctl(PR_SET_NAME, own_name);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    pthread_attr_destroy(&attributes);
    if (slot >= 0) {
        spin_lock(&stacks_lock);
        stacks[slot].thread = thread;
        stacks[slot].state = error ? STACK_FREE : STACK_RUNNING;
        spin_unlock(&stacks_lock);
    }
    return error == 0;
}

void own_thread_fork_child(void)
{
    spin_reset(&stacks_lock);
    for (int i = 0; i < STACKS; i++)
        stacks[i].state = STACK_FREE;
}
