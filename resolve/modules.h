/* The profiled process's modules and the resolver state that holds them
 * (see modules.c). */

#ifndef MPROF_RESOLVE_MODULES_H
#define MPROF_RESOLVE_MODULES_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "map.h"

enum module_state {
    MODULE_UNOPENED, /* declared, file not looked at yet */
    MODULE_READY,    /* reported to the Dwfl */
    MODULE_UNUSABLE, /* warned about; resolves as module+offset only */
};

/* A module's code symbols sorted by start address.  libdwfl's own lookup
 * (dwfl_module_addrinfo) scans the whole table per call, far too slow for
 * stripped libraries with 100k symbols, so it is replaced by this. */
struct symbol_index {
    struct code_symbol *symbols; /* defined in modules.c */
    size_t count;
    bool built;
};

struct module {
    uint64_t bias;
    uint64_t start;
    uint64_t end;
    char *build_id; /* lowercase hex, NULL when the profile recorded none */
    char *path;
    enum module_state state;
    Dwfl_Module *dwfl_module;    /* owned by the Dwfl; set when READY */
    struct symbol_index symbols; /* built on the first symbol lookup */
    struct pointer_map units;    /* Dwarf_CU pointer -> struct unit_index */
};

/* Everything known about one profiled process.  main owns the only one;
 * "reset" frees it and starts a new one. */
struct resolver {
    Dwfl *dwfl;
    struct module *modules; /* in declaration order: the first match wins */
    size_t module_count;
    size_t module_capacity;
    struct pointer_map answers; /* return address -> struct answer */
};

Dwfl *new_dwfl(void);
void resolver_free(struct resolver *resolver);

void add_module(struct resolver *resolver, const struct module *module);
bool open_module(struct resolver *resolver, struct module *module);
struct module *module_containing(struct resolver *resolver, uint64_t address);
struct module *module_named(struct resolver *resolver, const char *path);

char *symbol_name(struct module *module, Dwarf_Addr pc);

#endif
