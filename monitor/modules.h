/* The loaded objects, so that the reducer can map every address back to a
 * file, including objects dlclose'd before the data file is written. */
#ifndef MPROF_MODULES_H
#define MPROF_MODULES_H

#include <stdbool.h>
#include <stdint.h>

#define MODULE_BUILD_ID_MAX 64
#define MODULE_PATH_MAX 65535 /* the format's u16; a loader opens none longer than PATH_MAX */

struct module {
    struct module *next;
    uintptr_t bias;
    uintptr_t start;
    uintptr_t end;
    bool unloaded; /* set while writing: seen before a dlclose, gone now */
    uint8_t build_id_size;
    uint8_t build_id[MODULE_BUILD_ID_MAX];
    uint16_t path_size;
    char path[];
};

/* Remembers every object loaded now; called before each dlclose. */
void modules_note_loaded(const char *executable);
/* The list for the data file: what is loaded now plus what was remembered
 * and has gone since, however long.  Stays valid until
 * modules_release_current.  bounded: from a signal handler (see
 * spin_lock_bounded); the gone ones are left out if their lock stays held. */
struct module *modules_current(const char *executable, bool bounded);
void modules_release_current(void);

void modules_fork_prepare(void);
void modules_fork_parent(void);
void modules_fork_child(void);

#endif
