/* Answering mprof top (mprof(5), WATCHING A RUNNING PROCESS): a viewer asks
 * for the figures by writing the absolute name of a file into a request
 * (and, on a second line, classify, for the live blocks' leak kinds),
 * mprof-watch.PID in a directory only the process's user can use (its
 * runtime directory /run/user/UID, /run/mprof for root, else /tmp/mprof-UID),
 * and changes the request each time it wants newer figures; the process
 * answers each change with a snapshot written to that name, as long as it
 * runs with the credentials it started with and is dumpable.
 * An allocating thread looks for the first request as it looks at its
 * clock; the answers come from a thread of the monitor's, started then, so
 * that no thread of the program's waits while a file is written, and gone
 * once the viewer has removed its request (or left it unchanged for a
 * minute): with no one watching, the process has no thread, signal handler
 * or descriptor of the monitor's for it. */
#ifndef MPROF_WATCH_H
#define MPROF_WATCH_H

#include <stdbool.h>
#include <sys/types.h>

/* Writes a snapshot to the file named, its live blocks classified when the
 * request asks; the monitor's own, registered at start so that this layer
 * does not call up into monitor.c. */
typedef void (*watch_writer)(const char *path, bool classify);

/* At start-up and in a fork child (whose pid the request names), while the
 * process has one thread.  The first call notes the credentials answers
 * need; a fork child keeps its parent's. */
void watch_start(pid_t pid, watch_writer writer);
/* From the hot path, now and then: looks for a new request about ten times
 * a second while no thread answers, and starts one when there is. */
void watch_tick(void);

#endif
