/* The loaded objects, so that the reducer can map every address back to a
 * file, including objects dlclose'd before the data file is written. */
#ifndef MPROF_MODULES_H
#define MPROF_MODULES_H

#include <stdatomic.h>
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
    bool watched;  /* gone, and its place not yet seen taken (see modules_reused) */
    uint16_t tag;  /* its addresses' tag once another object took its place (retag.h) */
    uint8_t build_id_size;
    uint8_t build_id[MODULE_BUILD_ID_MAX];
    uint16_t path_size;
    char path[];
};

/* Remembers every object loaded now; called before each dlclose. */
void modules_note_loaded(const char *executable);
/* After each dlclose: watches the place of every remembered object that is
 * gone, until code is found there again. */
void modules_note_unloaded(const char *executable);

/* How many places are watched; read on the unwinder's slow paths. */
extern atomic_uint modules_watched;
/* Called for a return address the unwinder had not seen since the last
 * dlclose, while modules_watched is not 0: if it lies where a gone object
 * was, and another object is there now, the gone object's addresses are
 * retagged before anything of the new one is counted. */
void modules_reused(uintptr_t address);
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
