/*
 * mprof-resolve: turns return addresses recorded by the mprof monitor into
 * logical frames (function, file, line, inline chain), the way a debugger
 * does, using elfutils libdwfl/libdw.  The Python reducer starts it once and
 * talks to it over a pipe pair.
 *
 * Build (in resolve/; `make build/mprof-resolve` from the top does
 * the same):
 *   cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror \
 *      $(pkg-config --cflags libdw) *.c -o mprof-resolve \
 *      $(pkg-config --libs libdw) -liberty
 *
 * Usage: mprof-resolve [--debuginfod]
 *   By default DEBUGINFOD_URLS is removed from the environment, so that no
 *   lookup silently waits on the network; --debuginfod keeps it, letting
 *   libdwfl ask the debuginfod servers it names for debug information the
 *   machine lacks (libdebuginfod caches what it gets, in
 *   DEBUGINFOD_CACHE_PATH or ~/.cache/debuginfod_client).
 *
 * PROTOCOL
 *
 * Text lines both ways.  Fields are separated by one TAB.  Numbers are hex
 * without 0x (a leading 0x is accepted on input) unless marked decimal.
 * Output hex is lowercase without leading zeros.
 *
 * Requests (stdin):
 *
 *   module <bias> <start> <end> <build-id|-> <path>
 *       Declares a module of the profiled process: bias is the value added
 *       to the ELF's virtual addresses, [start, end) its run-time range,
 *       build-id the hex GNU build-id the profile recorded ("-" for none).
 *       The path is escaped as answers' fields are (see below).  Answers
 *       "done", or "error <message>" then "done".
 *       The file is opened only when an address in it, or its types, are
 *       first asked for.  If it cannot be used (missing, unreadable, not
 *       ELF, build-id differs) ONE line
 *           warning <path>: <problem>
 *       is printed at that moment, inside the answer that needed it, and its
 *       addresses resolve only as module+offset.  A file that can be used
 *       but has no DWARF, on the machine or (with --debuginfod) from a
 *       server, gets at that moment ONE line
 *           nodebug <path>
 *       and its addresses resolve by its ELF symbols alone, without file,
 *       line or inlined frames.  If its symbol tables (.symtab, .dynsym,
 *       MiniDebugInfo) name no code either, as in a stripped program, ONE
 *       line more follows:
 *           nosymbols <path>
 *       and its addresses resolve only as module+offset.  When ranges overlap (a
 *       module unloaded and another loaded in its place), the module
 *       declared FIRST wins.  Declaring a module forgets cached answers.
 *
 *   resolve <addr> <addr> ...
 *       Each address is a RETURN address: the lookup uses addr-1, so the
 *       call instruction is found.  Per address, in input order:
 *           frames <addr> <n>
 *       then n >= 1 lines, innermost first (like addr2line -i):
 *           frame <function> <file> <line decimal> <module path>
 *                 <offset> <inlined 0|1>
 *       Frame 0 is the function, possibly inlined, whose code holds the
 *       address, with the address's file:line; each later frame is the
 *       function the previous one was inlined into, with the file:line of
 *       the inlined call; the last one is the out-of-line function
 *       (inlined 0).  Function names are demangled (C++ and Rust linkage
 *       names; Rust's whole, with the legacy ::h<hash> or the v0 crate
 *       disambiguators, as rustc-demangle prints them without {:#}) or
 *       plain DWARF names, falling back to the ELF symbol table when there
 *       is no DWARF.  Unknown function: empty field; unknown file: empty,
 *       line 0.  <offset> is addr minus the module's bias, i.e. the address
 *       as the ELF file sees it (usable with addr2line -e); when no module
 *       holds the address, <module path> is empty and <offset> is addr.
 *       After the last address:
 *           done
 *       A resolve line with a malformed address answers "error <message>"
 *       then "done", and resolves none of its addresses.
 *
 *   types <module path>
 *       Lists the module's DWARF types with a size:
 *           type <size decimal> <name>
 *       one per distinct (size, name), sorted by name: named structs,
 *       classes and unions that are not declarations, and typedefs whose
 *       target (through typedefs and cv-qualifiers) has a size.  C++ names
 *       are qualified with their namespaces and classes.  Types local to a
 *       function are not listed.  Then "done".  No DWARF: just "done"
 *       (the module's own warning, if unusable, can come first).  Unknown
 *       module: "error <message>", then "done".
 *
 *   reset
 *       Forgets every module and cached answer (to start on another
 *       process).  Answers "done".
 *
 *   quit (or end of input)
 *       Exits with status 0.
 *
 * Any other malformed line answers "error <message>" then "done": every
 * request but quit is answered exactly once, and every answer ends with
 * "done".  Empty lines are ignored.  Output is flushed after every "done",
 * so a reader may wait for it after each request; "warning", "nodebug",
 * "nosymbols" and "error" lines can come before any line of an answer.  Paths in requests, and
 * names, paths and messages in answers, are escaped: a backslash as \\, a
 * byte below 0x20 and 0x7f as \xNN; so no field can hold a TAB or end a
 * line, and every byte comes back.
 *
 * DESIGN
 *
 * All modules go into one offline Dwfl, each reported on first use.  Three
 * caches keep lookups fast: answers per address; per module, its ELF
 * symbols sorted by address (libdwfl scans the whole symbol table per
 * lookup); per DWARF unit, built on its first address, the code ranges of
 * its functions and the scopes of C++ functions without linkage names.
 * Resolving an address is then a binary search and a walk down one
 * function's inline tree, instead of a walk over its whole unit.
 *
 * This file reads requests and frames their answers; the work is done in
 *   modules.c  module declarations, file checks, ELF symbol index
 *   frames.c   DWARF: per-unit index, inline chains, function names
 *   types.c    the types listing
 *   text.c     allocation, answer buffers, output lines
 *   map.c      the hash map behind the answer cache and unit indexes
 *
 * Names of inlined C++ functions with internal linkage (static, anonymous
 * namespace) come from DW_AT_name, so they carry no parameter list.
 */

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <libelf.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "map.h"
#include "modules.h"
#include "text.h"
#include "types.h"

/* ---- request fields ------------------------------------------------------ */

/* Parses a whole field as hex, with an optional 0x. */
static bool parse_hex(const char *field, uint64_t *value)
{
    if (field[0] == '0' && (field[1] == 'x' || field[1] == 'X'))
        field += 2;
    if (*field == '\0')
        return false;
    uint64_t result = 0;
    for (; *field; field++) {
        unsigned digit;
        if (*field >= '0' && *field <= '9')
            digit = (unsigned)(*field - '0');
        else if (*field >= 'a' && *field <= 'f')
            digit = (unsigned)(*field - 'a' + 10);
        else if (*field >= 'A' && *field <= 'F')
            digit = (unsigned)(*field - 'A' + 10);
        else
            return false;
        if (result > (UINT64_MAX >> 4))
            return false;
        result = (result << 4) | digit;
    }
    *value = result;
    return true;
}

/* Splits LINE in place at TABs into at most MAX fields; the last field keeps
 * any further TABs.  Returns the number of fields. */
static size_t split_fields(char *line, char **fields, size_t max)
{
    size_t count = 0;
    fields[count++] = line;
    while (count < max) {
        char *tab = strchr(fields[count - 1], '\t');
        if (tab == NULL)
            break;
        *tab = '\0';
        fields[count++] = tab + 1;
    }
    return count;
}

static bool is_hex_string(const char *text)
{
    if (*text == '\0')
        return false;
    for (; *text; text++) {
        if (!((*text >= '0' && *text <= '9') || (*text >= 'a' && *text <= 'f')
              || (*text >= 'A' && *text <= 'F')))
            return false;
    }
    return true;
}

/* ---- requests ---------------------------------------------------------- */

static void handle_module(struct resolver *resolver, char *arguments)
{
    char *fields[5];
    if (split_fields(arguments, fields, 5) != 5) {
        print_error("module: expected bias, start, end, build-id and path");
        return;
    }
    struct module module = {0};
    if (!parse_hex(fields[0], &module.bias) || !parse_hex(fields[1], &module.start)
        || !parse_hex(fields[2], &module.end)) {
        print_error("module: bad number in \"%s\t%s\t%s\"", fields[0], fields[1], fields[2]);
        return;
    }
    if (module.end <= module.start) {
        print_error("module: end %" PRIx64 " is not above start %" PRIx64, module.end,
                    module.start);
        return;
    }
    const char *build_id = fields[3];
    if (strcmp(build_id, "-") != 0 && (!is_hex_string(build_id) || strlen(build_id) % 2 != 0)) {
        print_error("module: bad build-id \"%s\"", build_id);
        return;
    }
    if (!unescape_field(fields[4])) {
        print_error("module: bad escape in the path");
        return;
    }
    if (fields[4][0] == '\0') {
        print_error("module: empty path");
        return;
    }
    if (strcmp(build_id, "-") != 0) {
        module.build_id = xstrdup(build_id);
        for (char *c = module.build_id; *c; c++) {
            if (*c >= 'A' && *c <= 'F')
                *c = (char)(*c - 'A' + 'a');
        }
    }
    module.path = xstrdup(fields[4]);
    module.state = MODULE_UNOPENED;

    add_module(resolver, &module);
    /* An address answered "unknown" may now fall in this module. */
    map_clear(&resolver->answers, free);
}

/* A cached answer to one address: its "frames" and "frame" lines. */
struct answer {
    size_t length;
    char text[];
};

/* ARGUMENTS is NULL for a resolve line without addresses. */
static void handle_resolve(struct resolver *resolver, char *arguments)
{
    size_t capacity = 16, count = 0;
    uint64_t *addresses = xrealloc(NULL, capacity * sizeof *addresses);
    for (char *field = arguments; field != NULL;) {
        char *tab = strchr(field, '\t');
        if (tab != NULL)
            *tab = '\0';
        if (count == capacity) {
            capacity *= 2;
            addresses = xrealloc(addresses, capacity * sizeof *addresses);
        }
        if (!parse_hex(field, &addresses[count])) {
            print_error("resolve: bad address \"%s\"", field);
            free(addresses);
            write_out("done\n", 5);
            flush_out();
            return;
        }
        count++;
        field = tab ? tab + 1 : NULL;
    }

    struct text text = {0};
    for (size_t i = 0; i < count; i++) {
        struct answer *answer = map_find(&resolver->answers, addresses[i]);
        if (answer == NULL) {
            text_truncate(&text, 0);
            describe_address(resolver, addresses[i], &text);
            answer = xrealloc(NULL, sizeof *answer + text.length);
            answer->length = text.length;
            memcpy(answer->text, text.data, text.length);
            map_insert(&resolver->answers, addresses[i], answer);
        }
        write_out(answer->text, answer->length);
    }
    text_free(&text);
    free(addresses);
    write_out("done\n", 5);
    flush_out();
}

static void handle_types(struct resolver *resolver, char *path)
{
    struct module *module = unescape_field(path) ? module_named(resolver, path) : NULL;
    if (module == NULL) {
        print_error("types: no module declared with path \"%s\"", path);
    } else if (open_module(resolver, module)) {
        Dwarf_Addr bias;
        /* Without DWARF the list is just empty: not worth a warning, as
         * most system libraries ship without it. */
        Dwarf *dwarf = dwfl_module_getdwarf(module->dwfl_module, &bias);
        if (dwarf != NULL)
            print_types(dwarf);
    }
    write_out("done\n", 5);
    flush_out();
}

/* ---- main loop ---------------------------------------------------------- */

int main(int argc, char **argv)
{
    bool use_debuginfod = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--debuginfod") == 0) {
            use_debuginfod = true;
        } else {
            fprintf(stderr, "usage: %s [--debuginfod]  (protocol: see mprof-resolve.c)\n",
                    argv[0]);
            return 2;
        }
    }
    if (!use_debuginfod)
        unsetenv("DEBUGINFOD_URLS");

    /* A vanished reader shows up as a failed flush, handled there. */
    signal(SIGPIPE, SIG_IGN);
    /* Static: stdio may use the buffer until exit, after main returns.
     * Large, so a batch of answers leaves in few writes.  Only stdio
     * touches it, and the program has a single thread. */
    static char output_buffer[1 << 16];
    setvbuf(stdout, output_buffer, _IOFBF, sizeof output_buffer);
    elf_version(EV_CURRENT);

    struct resolver resolver = {0};
    resolver.dwfl = new_dwfl();

    char *line = NULL;
    size_t line_capacity = 0;
    ssize_t length;
    while ((length = getline(&line, &line_capacity, stdin)) >= 0) {
        while (length > 0 && (line[length - 1] == '\n' || line[length - 1] == '\r'))
            line[--length] = '\0';
        if (length == 0)
            continue;
        if ((size_t)length != strlen(line)) {
            print_error("line contains a NUL byte");
            write_out("done\n", 5);
            flush_out();
            continue;
        }
        char *tab = strchr(line, '\t');
        char *arguments = tab ? tab + 1 : NULL;
        if (tab != NULL)
            *tab = '\0';
        const char *command = line;

        if (strcmp(command, "quit") == 0) {
            break;
        } else if (strcmp(command, "module") == 0) {
            if (arguments == NULL)
                print_error("module: expected bias, start, end, build-id and path");
            else
                handle_module(&resolver, arguments);
            write_out("done\n", 5);
            flush_out();
        } else if (strcmp(command, "resolve") == 0) {
            handle_resolve(&resolver, arguments);
        } else if (strcmp(command, "types") == 0) {
            handle_types(&resolver, arguments ? arguments : (char[]){""});
        } else if (strcmp(command, "reset") == 0) {
            resolver_free(&resolver);
            resolver.dwfl = new_dwfl();
            write_out("done\n", 5);
            flush_out();
        } else {
            print_error("unknown command \"%s\"", command);
            write_out("done\n", 5);
            flush_out();
        }
    }
    flush_out();

    free(line);
    resolver_free(&resolver);
    return 0;
}
