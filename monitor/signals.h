/* A profile from a process that a signal ends: the monitor's handler stands
 * behind every signal whose default action would end the process, writes
 * the final file, and lets the signal take its course.  The program sees
 * only the dispositions it set itself (sigaction and signal are wrapped),
 * and its own handlers run as before. */
#ifndef MPROF_SIGNALS_H
#define MPROF_SIGNALS_H

#include <signal.h>

/* Puts the monitor's handler behind each such signal whose disposition is
 * not SIG_IGN, taking over handlers installed before; skips except, the
 * dump signal.  Called once, by the constructor. */
void signals_watch(int except);

/* Installs one of the monitor's own handlers (the dump signal's), past the
 * wrappers. */
void signals_install_own(int signal_number, const struct sigaction *action);

#endif
