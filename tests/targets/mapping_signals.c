/* mmap and munmap from a signal handler while the main loop maps and
 * unmaps too: a timer sends SIGPROF every 100 microseconds; its handler
 * maps a page into one of 8 slots, unmapping the page an earlier call left
 * there.  The main loop maps and unmaps a page of its own ROUNDS times,
 * with a malloc and free between, so that the handler interrupts the
 * program, the monitor's mapping calls and its allocations alike.  At the
 * end the timer is stopped and the slots' pages unmapped: nothing is left
 * mapped.  Prints the number of rounds and of handler calls that mapped. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define SLOTS 8

static char *slots[SLOTS];
static volatile sig_atomic_t handler_maps;

__attribute__((noinline)) static char *map_page(void)
{
    return mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

__attribute__((noinline)) static char *handler_page(void)
{
    return mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void on_timer(int signal_number)
{
    (void)signal_number;
    int slot = handler_maps % SLOTS;
    if (slots[slot])
        munmap(slots[slot], PAGE);
    slots[slot] = handler_page();
    handler_maps++;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 20000;
    struct sigaction action = {.sa_handler = on_timer, .sa_flags = SA_RESTART};
    sigaction(SIGPROF, &action, NULL);
    timer_t timer;
    struct sigevent event = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGPROF};
    if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0)
        return 1;
    struct itimerspec every = {{0, 100000}, {0, 100000}};
    timer_settime(timer, 0, &every, NULL);
    for (long i = 0; i < rounds; i++) {
        char *page = map_page();
        page[0] = 1;
        free(malloc(64));
        munmap(page, PAGE);
    }
    timer_delete(timer);
    for (int i = 0; i < SLOTS; i++)
        if (slots[i])
            munmap(slots[i], PAGE);
    char line[64];
    int length = snprintf(line, sizeof line, "rounds %ld handler %d\n", rounds, (int)handler_maps);
    return write(1, line, (size_t)length) == length ? 0 : 1;
}
