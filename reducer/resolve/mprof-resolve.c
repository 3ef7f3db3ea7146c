/*
 * mprof-resolve: turns return addresses recorded by the mprof monitor into
 * logical frames (function, file, line, inline chain), the way a debugger
 * does, using elfutils libdwfl/libdw.  The Python reducer starts it once and
 * talks to it over a pipe pair.
 *
 * Build:
 *   cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror \
 *      $(pkg-config --cflags libdw) mprof-resolve.c -o mprof-resolve \
 *      $(pkg-config --libs libdw) -lstdc++
 *
 * Usage: mprof-resolve [--debuginfod]
 *   By default DEBUGINFOD_URLS is removed from the environment, so that no
 *   lookup silently waits on the network; --debuginfod keeps it, letting
 *   libdwfl download missing debug information.
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
 *       The path is the rest of the line and may hold TABs.  No answer.
 *       The file is opened only when an address in it, or its types, are
 *       first asked for.  If it cannot be used (missing, unreadable, not
 *       ELF, build-id differs) ONE line
 *           warning <path>: <problem>
 *       is printed at that moment, inside the answer that needed it, and its
 *       addresses resolve only as module+offset.  When ranges overlap (a
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
 *       (inlined 0).  Function names are demangled (C++ linkage names) or
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
 * Any other malformed line answers one "error <message>" line.  Empty lines
 * are ignored.  Output is flushed after every "done" and "error" line, so a
 * reader may wait for "done" after each resolve, types and reset request;
 * "warning" and "error" lines can come before any line of an answer.
 * TABs, CRs and newlines inside names and paths are printed as spaces.
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
 * Names of inlined C++ functions with internal linkage (static, anonymous
 * namespace) come from DW_AT_name, so they carry no parameter list.
 */

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* From libstdc++ (hence -lstdc++); C has no header for it. */
char *__cxa_demangle(const char *mangled_name, char *output_buffer,
                     size_t *length, int *status);

/* Bounds recursion over DIE trees, so corrupt or hostile DWARF nesting
 * cannot exhaust the stack.  Real programs nest far less. */
enum { MAX_DIE_DEPTH = 256 };

/* ---- small helpers ---------------------------------------------------- */

static void out_of_memory(void)
{
    fputs("mprof-resolve: out of memory\n", stderr);
    exit(1);
}

static void *xrealloc(void *block, size_t size)
{
    void *grown = realloc(block, size ? size : 1);
    if (grown == NULL)
        out_of_memory();
    return grown;
}

static char *xstrdup(const char *text)
{
    char *copy = strdup(text);
    if (copy == NULL)
        out_of_memory();
    return copy;
}

/* A growable byte buffer, used to build answers before caching them. */
struct text {
    char *data;
    size_t length;
    size_t capacity;
};

static void text_reserve(struct text *text, size_t extra)
{
    if (text->length + extra + 1 <= text->capacity)
        return;
    size_t capacity = text->capacity ? text->capacity : 256;
    while (capacity < text->length + extra + 1)
        capacity *= 2;
    text->data = xrealloc(text->data, capacity);
    text->capacity = capacity;
}

static void text_append(struct text *text, const char *bytes, size_t count)
{
    text_reserve(text, count);
    memcpy(text->data + text->length, bytes, count);
    text->length += count;
    text->data[text->length] = '\0';
}

static void text_printf(struct text *text, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static void text_printf(struct text *text, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    int needed = vsnprintf(NULL, 0, format, args);
    va_end(args);
    if (needed < 0)
        return;
    text_reserve(text, (size_t)needed);
    va_start(args, format);
    vsnprintf(text->data + text->length, (size_t)needed + 1, format, args);
    va_end(args);
    text->length += (size_t)needed;
}

/* Appends a TAB and then FIELD with the protocol's separators blanked, so a
 * strange name or path cannot break the line structure. */
static void text_append_field(struct text *text, const char *field)
{
    size_t count = field ? strlen(field) : 0;
    text_reserve(text, count + 1);
    text->data[text->length++] = '\t';
    for (size_t i = 0; i < count; i++) {
        char c = field[i];
        text->data[text->length++] = (c == '\t' || c == '\n' || c == '\r') ? ' ' : c;
    }
    text->data[text->length] = '\0';
}

static void text_truncate(struct text *text, size_t length)
{
    text->length = length;
    if (text->data)
        text->data[length] = '\0';
}

static void text_free(struct text *text)
{
    free(text->data);
    *text = (struct text){0};
}

static void write_out(const char *bytes, size_t count)
{
    fwrite(bytes, 1, count, stdout);
}

/* A failed flush means the reader is gone: nobody is left to answer. */
static void flush_out(void)
{
    if (fflush(stdout) != 0 || ferror(stdout))
        exit(1);
}

/* Prints "<kind>\t<message>\n" with the message's fields sanitized. */
static void print_notice(const char *kind, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static void print_notice(const char *kind, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    char *message = NULL;
    if (vasprintf(&message, format, args) < 0)
        out_of_memory();
    va_end(args);
    struct text line = {0};
    text_append(&line, kind, strlen(kind));
    text_append_field(&line, message);
    text_append(&line, "\n", 1);
    write_out(line.data, line.length);
    text_free(&line);
    free(message);
}

static void print_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

static void print_error(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    char *message = NULL;
    if (vasprintf(&message, format, args) < 0)
        out_of_memory();
    va_end(args);
    print_notice("error", "%s", message);
    free(message);
    flush_out();
}

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

/* Returns the demangled form of a C++/Rust linkage name, or a copy of NAME
 * when it is not mangled.  The caller frees it. */
static char *demangled_copy(const char *name)
{
    if (name[0] == '_' && name[1] == 'Z') {
        int status = 0;
        char *demangled = __cxa_demangle(name, NULL, NULL, &status);
        if (status == 0 && demangled != NULL)
            return demangled;
        free(demangled);
    }
    return xstrdup(name);
}

/* ---- a hash map from 64-bit keys to pointers ----------------------------- */

/* Open addressing with linear probing; an empty slot has a NULL value, so
 * NULL cannot be stored.  Used for the answer cache (addresses) and for
 * per-unit indexes (Dwarf_CU pointers). */
struct pointer_map {
    uint64_t *keys;
    void **values;
    size_t capacity; /* a power of two, or 0 */
    size_t count;
};

static size_t map_slot(const struct pointer_map *map, uint64_t key)
{
    /* Fibonacci hashing spreads aligned addresses and pointers well. */
    size_t mask = map->capacity - 1;
    size_t index = (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & mask;
    while (map->values[index] != NULL && map->keys[index] != key)
        index = (index + 1) & mask;
    return index;
}

static void *map_find(const struct pointer_map *map, uint64_t key)
{
    return map->count ? map->values[map_slot(map, key)] : NULL;
}

/* Stores VALUE under KEY, which must not be present yet. */
static void map_insert(struct pointer_map *map, uint64_t key, void *value)
{
    if ((map->count + 1) * 4 > map->capacity * 3) {
        struct pointer_map grown = {0};
        grown.capacity = map->capacity ? map->capacity * 2 : 64;
        grown.keys = calloc(grown.capacity, sizeof *grown.keys);
        grown.values = calloc(grown.capacity, sizeof *grown.values);
        if (grown.keys == NULL || grown.values == NULL)
            out_of_memory();
        for (size_t i = 0; i < map->capacity; i++) {
            if (map->values[i] != NULL) {
                size_t slot = map_slot(&grown, map->keys[i]);
                grown.keys[slot] = map->keys[i];
                grown.values[slot] = map->values[i];
            }
        }
        grown.count = map->count;
        free(map->keys);
        free(map->values);
        *map = grown;
    }
    size_t slot = map_slot(map, key);
    map->keys[slot] = key;
    map->values[slot] = value;
    map->count++;
}

/* Empties MAP, passing each value to FREE_VALUE. */
static void map_clear(struct pointer_map *map, void (*free_value)(void *))
{
    for (size_t i = 0; i < map->capacity; i++) {
        if (map->values[i] != NULL)
            free_value(map->values[i]);
    }
    free(map->keys);
    free(map->values);
    *map = (struct pointer_map){0};
}

/* A cached answer to one address: its "frames" and "frame" lines. */
struct answer {
    size_t length;
    char text[];
};

/* ---- modules ------------------------------------------------------------ */

enum module_state {
    MODULE_UNOPENED, /* declared, file not looked at yet */
    MODULE_READY,    /* reported to the Dwfl */
    MODULE_UNUSABLE, /* warned about; resolves as module+offset only */
};

/* One ELF symbol that may name code.  END is exclusive: START + size, or
 * for a sizeless symbol the end of its section. */
struct code_symbol {
    uint64_t start;
    uint64_t end;
    const char *name; /* in libelf's string table, alive as long as the Dwfl */
    bool sized;
    int binding_rank; /* higher is preferred at equal addresses */
    int table_index;  /* then the first in the table, as libdwfl picks */
};

/* A module's code symbols sorted by start address.  libdwfl's own lookup
 * (dwfl_module_addrinfo) scans the whole table per call, far too slow for
 * stripped libraries with 100k symbols, so it is replaced by this. */
struct symbol_index {
    struct code_symbol *symbols;
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

struct resolver {
    Dwfl *dwfl;
    struct module *modules; /* in declaration order: the first match wins */
    size_t module_count;
    size_t module_capacity;
    struct pointer_map answers; /* return address -> struct answer */
};

/* Separate debug files are found through the build-id tree and
 * .gnu_debuglink, as a debugger finds them. */
static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = NULL,
};

static Dwfl *new_dwfl(void)
{
    Dwfl *dwfl = dwfl_begin(&offline_callbacks);
    if (dwfl == NULL) {
        fprintf(stderr, "mprof-resolve: cannot start libdwfl: %s\n", dwfl_errmsg(-1));
        exit(1);
    }
    return dwfl;
}

static void unit_index_free(void *index);

static void resolver_free(struct resolver *resolver)
{
    for (size_t i = 0; i < resolver->module_count; i++) {
        struct module *module = &resolver->modules[i];
        free(module->build_id);
        free(module->path);
        free(module->symbols.symbols);
        map_clear(&module->units, unit_index_free);
    }
    free(resolver->modules);
    map_clear(&resolver->answers, free);
    dwfl_end(resolver->dwfl);
    *resolver = (struct resolver){0};
}

static void hex_encode(const unsigned char *bytes, size_t count, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < count; i++) {
        hex[2 * i] = digits[bytes[i] >> 4];
        hex[2 * i + 1] = digits[bytes[i] & 15];
    }
    hex[2 * count] = '\0';
}

/* Checks that MODULE's file is a readable ELF whose build-id matches the
 * profile's.  Returns NULL when it is, or a malloc'd description of the
 * problem.  Done with our own descriptor, before libdwfl sees the file, so
 * that each problem gets a precise message and a wrong file is never
 * reported to the Dwfl. */
static char *check_module_file(const struct module *module)
{
    int fd = open(module->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return xstrdup("file not found");
        return xstrdup(strerror(errno));
    }
    char *problem = NULL;
    struct stat status;
    Elf *elf = NULL;
    if (fstat(fd, &status) != 0) {
        problem = xstrdup(strerror(errno));
        goto out;
    }
    if (!S_ISREG(status.st_mode)) {
        problem = xstrdup("not a regular file");
        goto out;
    }
    elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (elf == NULL || elf_kind(elf) != ELF_K_ELF) {
        problem = xstrdup("not an ELF file");
        goto out;
    }
    GElf_Ehdr header;
    if (gelf_getehdr(elf, &header) == NULL) {
        if (asprintf(&problem, "cannot read its ELF header: %s", elf_errmsg(-1)) < 0)
            out_of_memory();
        goto out;
    }
    /* Such a file loads only at its link addresses (libdwfl ignores the
     * bias for it): a bias means the file is not the one that ran. */
    if (header.e_type == ET_EXEC && module->bias != 0) {
        if (asprintf(&problem,
                     "position-dependent executable, yet the profile recorded load bias %" PRIx64,
                     module->bias) < 0)
            out_of_memory();
        goto out;
    }
    if (module->build_id == NULL)
        goto out;
    const void *bits = NULL;
    ssize_t length = dwelf_elf_gnu_build_id(elf, &bits);
    if (length < 0) {
        if (asprintf(&problem, "cannot read its build-id: %s", elf_errmsg(-1)) < 0)
            out_of_memory();
        goto out;
    }
    char *file_id = xrealloc(NULL, 2 * (size_t)length + 1);
    hex_encode(bits, (size_t)length, file_id);
    if (strcmp(file_id, module->build_id) != 0) {
        if (asprintf(&problem, "build-id mismatch (file has %s, the profile recorded %s)",
                     length ? file_id : "none", module->build_id) < 0)
            out_of_memory();
    }
    free(file_id);
out:
    if (elf != NULL)
        elf_end(elf);
    close(fd);
    return problem;
}

/* Opens MODULE on first use: checks its file and reports it to the Dwfl, or
 * prints its one warning.  Returns true when it is usable. */
static bool open_module(struct resolver *resolver, struct module *module)
{
    if (module->state != MODULE_UNOPENED)
        return module->state == MODULE_READY;

    char *problem = check_module_file(module);
    if (problem == NULL) {
        dwfl_report_begin_add(resolver->dwfl);
        /* add_p_vaddr: BASE is the bias, added to the ELF's p_vaddr. */
        module->dwfl_module = dwfl_report_elf(resolver->dwfl, module->path, module->path, -1,
                                              module->bias, true);
        if (module->dwfl_module == NULL)
            problem = xstrdup(dwfl_errmsg(-1));
        if (dwfl_report_end(resolver->dwfl, NULL, NULL) != 0 && problem == NULL)
            problem = xstrdup(dwfl_errmsg(-1));
    }
    if (problem != NULL) {
        print_notice("warning", "%s: %s", module->path, problem);
        free(problem);
        module->state = MODULE_UNUSABLE;
        module->dwfl_module = NULL;
        return false;
    }
    module->state = MODULE_READY;
    return true;
}

static struct module *module_containing(struct resolver *resolver, uint64_t address)
{
    for (size_t i = 0; i < resolver->module_count; i++) {
        struct module *module = &resolver->modules[i];
        if (address >= module->start && address < module->end)
            return module;
    }
    return NULL;
}

static struct module *module_named(struct resolver *resolver, const char *path)
{
    for (size_t i = 0; i < resolver->module_count; i++) {
        if (strcmp(resolver->modules[i].path, path) == 0)
            return &resolver->modules[i];
    }
    return NULL;
}

/* ---- ELF symbols -------------------------------------------------------- */

static int binding_rank(unsigned char binding)
{
    switch (binding) {
    case STB_GLOBAL:
        return 3;
    case STB_GNU_UNIQUE:
    case STB_WEAK:
        return 2;
    default:
        return 1;
    }
}

/* The run-time end of section SECTION_INDEX of ELF, or 0 if unknown. */
static uint64_t section_end(Elf *elf, GElf_Word section_index, Dwarf_Addr bias)
{
    GElf_Shdr header;
    Elf_Scn *section = elf ? elf_getscn(elf, section_index) : NULL;
    if (section == NULL || gelf_getshdr(section, &header) == NULL)
        return 0;
    return header.sh_addr + header.sh_size + bias;
}

/* Sorts by start; at equal starts the least preferred first (sizeless,
 * worse binding, later in the table), so that scanning backwards meets the
 * preferred one first. */
static int compare_code_symbols(const void *left, const void *right)
{
    const struct code_symbol *a = left, *b = right;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->sized != b->sized)
        return a->sized ? 1 : -1;
    if (a->binding_rank != b->binding_rank)
        return a->binding_rank < b->binding_rank ? -1 : 1;
    return (a->table_index < b->table_index) - (a->table_index > b->table_index);
}

static void build_symbol_index(Dwfl_Module *dwfl_module, struct symbol_index *index)
{
    index->built = true;
    int symbol_count = dwfl_module_getsymtab(dwfl_module);
    if (symbol_count <= 0)
        return;
    index->symbols = xrealloc(NULL, (size_t)symbol_count * sizeof *index->symbols);
    for (int i = 0; i < symbol_count; i++) {
        GElf_Sym symbol;
        GElf_Addr start;
        GElf_Word section_index;
        Elf *elf = NULL;
        Dwarf_Addr bias = 0;
        const char *name = dwfl_module_getsym_info(dwfl_module, i, &symbol, &start,
                                                   &section_index, &elf, &bias);
        if (name == NULL || name[0] == '\0' || section_index == SHN_UNDEF
            || section_index == SHN_ABS || section_index == SHN_COMMON)
            continue;
        int type = GELF_ST_TYPE(symbol.st_info);
        if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
            continue;
        struct code_symbol entry = {
            .start = start,
            .end = start + symbol.st_size,
            .name = name,
            .sized = symbol.st_size > 0,
            .binding_rank = binding_rank(GELF_ST_BIND(symbol.st_info)),
            .table_index = i,
        };
        if (!entry.sized)
            entry.end = section_end(elf, section_index, bias);
        if (entry.end > entry.start)
            index->symbols[index->count++] = entry;
    }
    qsort(index->symbols, index->count, sizeof *index->symbols, compare_code_symbols);
}

/* How far back to look for a sized symbol enclosing later ones; nested
 * symbols are rare and shallow, so a small bound keeps lookups cheap. */
enum { ENCLOSING_SYMBOL_WINDOW = 64 };

/* The symbol naming code at PC, with libdwfl's preferences: the nearest
 * sized symbol containing PC; failing that, a sizeless symbol at the
 * nearest address below PC, if PC is still in its section. */
static const struct code_symbol *find_code_symbol(const struct symbol_index *index, uint64_t pc)
{
    size_t low = 0, high = index->count;
    while (low < high) { /* first symbol starting above PC */
        size_t middle = low + (high - low) / 2;
        if (index->symbols[middle].start <= pc)
            low = middle + 1;
        else
            high = middle;
    }
    if (low == 0)
        return NULL;
    size_t nearest = low - 1;
    for (size_t i = nearest + 1; i-- > 0 && nearest - i < ENCLOSING_SYMBOL_WINDOW;) {
        const struct code_symbol *symbol = &index->symbols[i];
        if (symbol->sized && pc < symbol->end)
            return symbol;
    }
    uint64_t nearest_start = index->symbols[nearest].start;
    for (size_t i = nearest + 1; i-- > 0 && index->symbols[i].start == nearest_start;) {
        const struct code_symbol *symbol = &index->symbols[i];
        if (!symbol->sized && pc < symbol->end)
            return symbol;
    }
    return NULL;
}

/* The ELF symbol containing PC, demangled, or NULL.  The caller frees it. */
static char *symbol_name(struct module *module, Dwarf_Addr pc)
{
    if (!module->symbols.built)
        build_symbol_index(module->dwfl_module, &module->symbols);
    const struct code_symbol *symbol = find_code_symbol(&module->symbols, pc);
    return symbol ? demangled_copy(symbol->name) : NULL;
}

/* ---- per-unit DWARF indexes ---------------------------------------------- */

/* Finding the function at an address by walking a unit from its root costs
 * milliseconds in a large C++ unit (namespace std alone holds thousands of
 * declarations), so each unit is walked once, on first use, into: */
struct function_range {
    Dwarf_Addr low; /* DWARF addresses, before the module's bias */
    Dwarf_Addr high;
    Dwarf_Die die; /* an out-of-line function: subprogram or entry point */
};

/* A function DIE without a linkage name, declared inside namespaces or
 * classes: C++ gives internal-linkage functions no linkage name, so their
 * qualification must come from where they are declared. */
struct scoped_function {
    Dwarf_Off offset;
    const char *scope; /* "ns::Class::", one of the unit's scope strings */
};

struct unit_index {
    struct function_range *ranges; /* sorted by low */
    size_t range_count;
    size_t range_capacity;
    struct scoped_function *scoped; /* sorted by offset */
    size_t scoped_count;
    size_t scoped_capacity;
    char **scopes; /* owned qualification prefixes */
    size_t scope_count;
    size_t scope_capacity;
};

/* Makes room for one more element in a growable array. */
static void *grow_array(void *array, size_t *capacity, size_t count, size_t element_size)
{
    if (count < *capacity)
        return array;
    *capacity = *capacity ? *capacity * 2 : 64;
    return xrealloc(array, *capacity * element_size);
}

static void unit_index_free(void *pointer)
{
    struct unit_index *index = pointer;
    for (size_t i = 0; i < index->scope_count; i++)
        free(index->scopes[i]);
    free(index->scopes);
    free(index->scoped);
    free(index->ranges);
    free(index);
}

/* Whether names in the unit nest in their enclosing namespaces and
 * records (C++ and the like), rather than all being file-scope names (C). */
static bool nests_names(Dwarf_Die *unit_die)
{
    switch (dwarf_srclang(unit_die)) {
    case DW_LANG_C89:
    case DW_LANG_C:
    case DW_LANG_C99:
    case DW_LANG_C11:
    case DW_LANG_ObjC:
        return false;
    default:
        return true;
    }
}

static const char *anonymous_scope_name(int tag)
{
    switch (tag) {
    case DW_TAG_namespace:
        return "(anonymous namespace)";
    case DW_TAG_class_type:
        return "(anonymous class)";
    case DW_TAG_union_type:
        return "(anonymous union)";
    default:
        return "(anonymous struct)";
    }
}

struct unit_walk {
    struct unit_index *index;
    bool nested_names;
    struct text scope;         /* the current qualification prefix */
    const char *scope_string;  /* its copy in index->scopes, made on demand */
};

static void add_function_ranges(struct unit_index *index, Dwarf_Die *die)
{
    Dwarf_Addr base, low, high;
    ptrdiff_t offset = 0;
    /* Several ranges when the compiler split the function (hot and .cold
     * parts); none for a declaration or abstract instance. */
    while ((offset = dwarf_ranges(die, offset, &base, &low, &high)) > 0) {
        if (high <= low)
            continue;
        index->ranges = grow_array(index->ranges, &index->range_capacity, index->range_count,
                                   sizeof *index->ranges);
        index->ranges[index->range_count++] = (struct function_range){low, high, *die};
    }
}

static void note_scoped_function(struct unit_walk *walk, Dwarf_Die *die)
{
    /* A DIE that refers to its declaration takes its name from there. */
    if (dwarf_hasattr(die, DW_AT_linkage_name) || dwarf_hasattr(die, DW_AT_MIPS_linkage_name)
        || dwarf_hasattr(die, DW_AT_abstract_origin) || dwarf_hasattr(die, DW_AT_specification))
        return;
    struct unit_index *index = walk->index;
    if (walk->scope_string == NULL) {
        index->scopes = grow_array(index->scopes, &index->scope_capacity, index->scope_count,
                                   sizeof *index->scopes);
        walk->scope_string = index->scopes[index->scope_count++] = xstrdup(walk->scope.data);
    }
    index->scoped = grow_array(index->scoped, &index->scoped_capacity, index->scoped_count,
                               sizeof *index->scoped);
    index->scoped[index->scoped_count++]
        = (struct scoped_function){dwarf_dieoffset(die), walk->scope_string};
}

static void walk_unit(Dwarf_Die *parent, struct unit_walk *walk, int depth);

/* Walks SCOPE_DIE's children with "NAME::" added to the prefix. */
static void walk_named_scope(Dwarf_Die *scope_die, const char *name, struct unit_walk *walk,
                             int depth)
{
    size_t saved_length = walk->scope.length;
    const char *saved_string = walk->scope_string;
    text_append(&walk->scope, name, strlen(name));
    text_append(&walk->scope, "::", 2);
    walk->scope_string = NULL;
    walk_unit(scope_die, walk, depth);
    text_truncate(&walk->scope, saved_length);
    walk->scope_string = saved_string;
}

/* Records the out-of-line functions below PARENT, and the scopes of those
 * without linkage names.  Function bodies are entered too, for nested
 * functions (a GNU C extension) and member functions of local classes;
 * inlined subroutines are not, as they cannot own out-of-line code. */
static void walk_unit(Dwarf_Die *parent, struct unit_walk *walk, int depth)
{
    Dwarf_Die child;
    if (depth >= MAX_DIE_DEPTH || dwarf_child(parent, &child) != 0)
        return;
    do {
        int tag = dwarf_tag(&child);
        switch (tag) {
        case DW_TAG_subprogram:
        case DW_TAG_entry_point:
            add_function_ranges(walk->index, &child);
            if (walk->nested_names && walk->scope.length > 0)
                note_scoped_function(walk, &child);
            if (dwarf_haschildren(&child))
                walk_unit(&child, walk, depth + 1);
            break;
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
        case DW_TAG_with_stmt:
            if (dwarf_haschildren(&child))
                walk_unit(&child, walk, depth + 1);
            break;
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type: {
            if (!dwarf_haschildren(&child))
                break;
            /* In C a struct is no scope: its nested names are file-scope. */
            if (!walk->nested_names && tag != DW_TAG_namespace && tag != DW_TAG_module) {
                walk_unit(&child, walk, depth + 1);
                break;
            }
            const char *name = dwarf_diename(&child);
            walk_named_scope(&child, name ? name : anonymous_scope_name(tag), walk, depth + 1);
            break;
        }
        default:
            break;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
}

static int compare_function_ranges(const void *left, const void *right)
{
    const struct function_range *a = left, *b = right;
    return (a->low > b->low) - (a->low < b->low);
}

static int compare_scoped_functions(const void *left, const void *right)
{
    const struct scoped_function *a = left, *b = right;
    return (a->offset > b->offset) - (a->offset < b->offset);
}

/* The index of the unit whose root DIE is UNIT_DIE, built on first use. */
static struct unit_index *unit_index_of(struct module *module, Dwarf_Die *unit_die)
{
    uint64_t key = (uint64_t)(uintptr_t)unit_die->cu;
    struct unit_index *index = map_find(&module->units, key);
    if (index != NULL)
        return index;
    index = calloc(1, sizeof *index);
    if (index == NULL)
        out_of_memory();
    struct unit_walk walk = {.index = index, .nested_names = nests_names(unit_die)};
    walk_unit(unit_die, &walk, 0);
    text_free(&walk.scope);
    if (index->range_count > 0)
        qsort(index->ranges, index->range_count, sizeof *index->ranges, compare_function_ranges);
    if (index->scoped_count > 0)
        qsort(index->scoped, index->scoped_count, sizeof *index->scoped,
              compare_scoped_functions);
    map_insert(&module->units, key, index);
    return index;
}

/* How far back to look for a range enclosing later ones (an entry point
 * inside its function); such nesting is rare and shallow. */
enum { ENCLOSING_RANGE_WINDOW = 64 };

/* The innermost out-of-line function whose code holds PC, or NULL. */
static Dwarf_Die *function_at(struct unit_index *index, Dwarf_Addr pc)
{
    size_t low = 0, high = index->range_count;
    while (low < high) { /* first range starting above PC */
        size_t middle = low + (high - low) / 2;
        if (index->ranges[middle].low <= pc)
            low = middle + 1;
        else
            high = middle;
    }
    for (size_t i = low; i-- > 0 && low - i <= ENCLOSING_RANGE_WINDOW;) {
        if (pc < index->ranges[i].high)
            return &index->ranges[i].die;
    }
    return NULL;
}

/* The qualification prefix of a function declared at DECLARATION, or "". */
static const char *declared_scope(struct module *module, Dwarf_Die *declaration)
{
    Dwarf_Die unit_die;
    if (dwarf_diecu(declaration, &unit_die, NULL, NULL) == NULL)
        return "";
    struct unit_index *index = unit_index_of(module, &unit_die);
    Dwarf_Off offset = dwarf_dieoffset(declaration);
    size_t low = 0, high = index->scoped_count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (index->scoped[middle].offset == offset)
            return index->scoped[middle].scope;
        if (index->scoped[middle].offset < offset)
            low = middle + 1;
        else
            high = middle;
    }
    return "";
}

/* ---- function names ----------------------------------------------------- */

static const char *attribute_string(Dwarf_Die *die, unsigned int name)
{
    Dwarf_Attribute attribute;
    /* dwarf_formstring accepts NULL, returning NULL. */
    return dwarf_formstring(dwarf_attr_integrate(die, name, &attribute));
}

/* The DIE that declares ENTITY, reached through its abstract origin,
 * specification or type signature: a concrete or inlined function, an
 * out-of-class definition or a type-unit stub sits elsewhere than the
 * declaration, whose parents are the entity's namespaces and classes. */
static Dwarf_Die declaring_die(Dwarf_Die *entity)
{
    Dwarf_Die declaration = *entity;
    Dwarf_Attribute attribute;
    /* Bounded: a reference cycle in corrupt DWARF must not hang us. */
    for (int hops = 0; hops < 8; hops++) {
        Dwarf_Attribute *reference = dwarf_attr(&declaration, DW_AT_abstract_origin, &attribute);
        if (reference == NULL)
            reference = dwarf_attr(&declaration, DW_AT_specification, &attribute);
        if (reference == NULL)
            reference = dwarf_attr(&declaration, DW_AT_signature, &attribute);
        Dwarf_Die target;
        if (reference == NULL || dwarf_formref_die(reference, &target) == NULL)
            break;
        declaration = target;
    }
    return declaration;
}

/* The DIE's function name, with attributes looked up through abstract
 * origins and specifications.  In C++-like units (NESTED_NAMES): the
 * demangled linkage name, qualified and with parameter types as C++ users
 * know it, else (internal linkage has none) DW_AT_name qualified with its
 * namespaces and classes.  In C units: DW_AT_name, since a linkage name
 * there is an asm label such as glibc's __GI_ aliases.  NULL when the DIE
 * has no name.  The caller frees the result. */
static char *function_name(struct module *module, Dwarf_Die *die, bool nested_names)
{
    const char *linkage_name = attribute_string(die, DW_AT_linkage_name);
    if (linkage_name == NULL)
        linkage_name = attribute_string(die, DW_AT_MIPS_linkage_name);
    const char *name = attribute_string(die, DW_AT_name);
    if (linkage_name != NULL && (nested_names || name == NULL))
        return demangled_copy(linkage_name);
    if (name == NULL)
        return NULL;
    if (!nested_names)
        return xstrdup(name);
    Dwarf_Die declaration = declaring_die(die);
    const char *scope = declared_scope(module, &declaration);
    char *qualified = NULL;
    if (asprintf(&qualified, "%s%s", scope, name) < 0)
        out_of_memory();
    return qualified;
}

/* The call site of an inlined subroutine DIE. */
static void call_site(Dwarf_Die *inlined, Dwarf_Files *files, size_t file_count,
                      const char **file, int *line)
{
    Dwarf_Attribute attribute;
    Dwarf_Word value;
    *file = NULL;
    *line = 0;
    if (files != NULL
        && dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attribute), &value) == 0
        && value < file_count) {
        *file = dwarf_filesrc(files, value, NULL, NULL);
        /* libdw names DWARF 4's unused file 0 "???". */
        if (*file != NULL && strcmp(*file, "???") == 0)
            *file = NULL;
    }
    if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attribute), &value) == 0
        && value <= INT32_MAX)
        *line = (int)value;
}

/* ---- resolve ------------------------------------------------------------ */

/* The function DIEs that contain PC, from the out-of-line function to the
 * innermost inlined subroutine. */
struct function_chain {
    Dwarf_Die dies[MAX_DIE_DEPTH];
    int count;
};

static bool has_pc_attributes(Dwarf_Die *die)
{
    return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges)
           || dwarf_hasattr(die, DW_AT_entry_pc);
}

/* Appends to CHAIN the inlined subroutines (and nested functions) below
 * PARENT that contain PC, descending only into DIEs that contain PC or, like
 * some lexical blocks, carry no code range of their own.  These are the
 * concrete parents of the innermost DIE, i.e. the inline chain (where
 * dwarf_getscopes would switch to the abstract origin's scopes). */
static void find_inline_chain(Dwarf_Die *parent, Dwarf_Addr pc, struct function_chain *chain,
                              int depth)
{
    Dwarf_Die child;
    if (depth >= MAX_DIE_DEPTH || dwarf_child(parent, &child) != 0)
        return;
    do {
        int tag = dwarf_tag(&child);
        switch (tag) {
        case DW_TAG_inlined_subroutine:
        case DW_TAG_subprogram:
        case DW_TAG_entry_point:
            if (dwarf_haspc(&child, pc) != 1)
                break;
            if (chain->count < MAX_DIE_DEPTH)
                chain->dies[chain->count++] = child;
            find_inline_chain(&child, pc, chain, depth + 1);
            return;
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
        case DW_TAG_with_stmt:
            if (!has_pc_attributes(&child)) {
                size_t before = (size_t)chain->count;
                find_inline_chain(&child, pc, chain, depth + 1);
                if ((size_t)chain->count != before)
                    return;
            } else if (dwarf_haspc(&child, pc) == 1) {
                find_inline_chain(&child, pc, chain, depth + 1);
                return;
            }
            break;
        default:
            break;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
}

static void append_frame(struct text *out, const char *function, const char *file, int line,
                         const char *module_path, uint64_t offset, bool inlined)
{
    text_append(out, "frame", 5);
    text_append_field(out, function);
    text_append_field(out, file);
    text_printf(out, "\t%d", line);
    text_append_field(out, module_path);
    text_printf(out, "\t%" PRIx64 "\t%d\n", offset, inlined ? 1 : 0);
}

/* The unit DIE holding the code at PC: the split unit's for a skeleton
 * unit (-gsplit-dwarf), since its children hold the code DIEs. */
static bool code_unit_die(Dwfl_Module *dwfl_module, Dwarf_Addr pc, Dwarf_Addr *dwarf_bias,
                          Dwarf_Die *unit_die)
{
    Dwarf_Die *cu_die = dwfl_module_addrdie(dwfl_module, pc, dwarf_bias);
    if (cu_die == NULL)
        return false;
    uint8_t unit_type = 0;
    Dwarf_Die split_die;
    if (dwarf_cu_info(cu_die->cu, NULL, &unit_type, NULL, &split_die, NULL, NULL, NULL) == 0
        && unit_type == DW_UT_skeleton && dwarf_tag(&split_die) == DW_TAG_compile_unit)
        *unit_die = split_die;
    else
        *unit_die = *cu_die;
    return true;
}

/* Appends the answer for one return address to OUT. */
static void describe_address(struct resolver *resolver, uint64_t address, struct text *out)
{
    /* Address 0 has no call instruction before it. */
    struct module *module = address ? module_containing(resolver, address - 1) : NULL;
    if (module == NULL || !open_module(resolver, module)) {
        text_printf(out, "frames\t%" PRIx64 "\t1\n", address);
        append_frame(out, NULL, NULL, 0, module ? module->path : NULL,
                     module ? address - module->bias : address, false);
        return;
    }

    Dwfl_Module *dwfl_module = module->dwfl_module;
    Dwarf_Addr pc = address - 1;
    uint64_t offset = address - module->bias;

    const char *inner_file = NULL;
    int inner_line = 0;
    Dwfl_Line *line_info = dwfl_module_getsrc(dwfl_module, pc);
    if (line_info != NULL)
        inner_file = dwfl_lineinfo(line_info, NULL, &inner_line, NULL, NULL, NULL);

    struct function_chain chain;
    chain.count = 0;
    Dwarf_Files *files = NULL;
    size_t file_count = 0;
    bool nested_names = false;
    Dwarf_Addr dwarf_bias = 0;
    Dwarf_Die unit_die;
    if (code_unit_die(dwfl_module, pc, &dwarf_bias, &unit_die)) {
        nested_names = nests_names(&unit_die);
        Dwarf_Die *function = function_at(unit_index_of(module, &unit_die), pc - dwarf_bias);
        if (function != NULL) {
            chain.dies[chain.count++] = *function;
            find_inline_chain(function, pc - dwarf_bias, &chain, 0);
        }
        if (dwarf_getsrcfiles(&unit_die, &files, &file_count) != 0)
            files = NULL;
    }

    /* Frames run from the innermost function DIE out to the nearest
     * out-of-line one (a nested C function's parent is not a caller). */
    int outermost = 0;
    for (int i = chain.count - 1; i >= 0; i--) {
        if (dwarf_tag(&chain.dies[i]) != DW_TAG_inlined_subroutine) {
            outermost = i;
            break;
        }
    }
    int frame_count = chain.count ? chain.count - outermost : 1;
    text_printf(out, "frames\t%" PRIx64 "\t%d\n", address, frame_count);

    if (chain.count == 0) {
        char *name = symbol_name(module, pc);
        append_frame(out, name, inner_file, inner_line, module->path, offset, false);
        free(name);
        return;
    }
    const char *file = inner_file;
    int line = inner_line;
    for (int i = chain.count - 1; i >= outermost; i--) {
        Dwarf_Die *die = &chain.dies[i];
        bool inlined = dwarf_tag(die) == DW_TAG_inlined_subroutine;
        char *name = function_name(module, die, nested_names);
        if (name == NULL && !inlined)
            name = symbol_name(module, pc);
        append_frame(out, name, file, line, module->path, offset, inlined);
        free(name);
        if (inlined)
            call_site(die, files, file_count, &file, &line);
    }
}

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

/* ---- types -------------------------------------------------------------- */

struct type_entry {
    Dwarf_Word size;
    char *name;
};

struct type_list {
    struct type_entry *entries;
    size_t count;
    size_t capacity;
};

static void add_type(struct type_list *types, Dwarf_Word size, const struct text *scope,
                     const char *name)
{
    if (types->count == types->capacity) {
        types->capacity = types->capacity ? types->capacity * 2 : 256;
        types->entries = xrealloc(types->entries, types->capacity * sizeof *types->entries);
    }
    size_t scope_length = scope->length;
    size_t name_length = strlen(name);
    char *qualified = xrealloc(NULL, scope_length + name_length + 1);
    memcpy(qualified, scope->data ? scope->data : "", scope_length);
    memcpy(qualified + scope_length, name, name_length + 1);
    types->entries[types->count++] = (struct type_entry){size, qualified};
}

static bool is_declaration(Dwarf_Die *die)
{
    Dwarf_Attribute attribute;
    bool flag = false;
    return dwarf_attr(die, DW_AT_declaration, &attribute) != NULL
           && dwarf_formflag(&attribute, &flag) == 0 && flag;
}

/* Appends "ns::Outer::" for the namespaces and records enclosing DIE.
 * dwarf_getscopes_die walks DIE's unit from its root: fine for the rare
 * definitions that need it, too slow for every address. */
static void append_enclosing_scopes(Dwarf_Die *die, struct text *out)
{
    Dwarf_Die *scopes = NULL;
    int scope_count = dwarf_getscopes_die(die, &scopes);
    /* scopes[0] is DIE itself, the last one its unit. */
    for (int i = scope_count - 1; i >= 1; i--) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag != DW_TAG_namespace && tag != DW_TAG_class_type && tag != DW_TAG_structure_type
            && tag != DW_TAG_union_type)
            continue;
        const char *name = dwarf_diename(&scopes[i]);
        if (name == NULL)
            name = anonymous_scope_name(tag);
        text_append(out, name, strlen(name));
        text_append(out, "::", 2);
    }
    free(scopes);
}

static void collect_types(Dwarf_Die *parent, struct text *scope, bool qualify_records,
                          struct type_list *types, int depth);

/* Collects the types below SCOPE_DIE with "NAME::" added to SCOPE. */
static void collect_scope_types(Dwarf_Die *scope_die, const char *name, struct text *scope,
                                bool qualify_records, struct type_list *types, int depth)
{
    size_t scope_length = scope->length;
    text_append(scope, name, strlen(name));
    text_append(scope, "::", 2);
    collect_types(scope_die, scope, qualify_records, types, depth);
    text_truncate(scope, scope_length);
}

/* Collects the types below PARENT.  SCOPE holds the qualification prefix
 * ("ns::Outer::"); records nest names only when QUALIFY_RECORDS, since a C
 * struct defined inside another is still a file-scope name.  Function
 * bodies are not entered: their types are local. */
static void collect_types(Dwarf_Die *parent, struct text *scope, bool qualify_records,
                          struct type_list *types, int depth)
{
    Dwarf_Die child;
    if (depth >= MAX_DIE_DEPTH || dwarf_child(parent, &child) != 0)
        return;
    do {
        int tag = dwarf_tag(&child);
        const char *name;
        Dwarf_Word size;
        switch (tag) {
        case DW_TAG_structure_type:
        case DW_TAG_class_type:
        case DW_TAG_union_type: {
            name = attribute_string(&child, DW_AT_name);
            /* A definition placed apart from its declaration (type units,
             * out-of-class definitions), or a stub standing for a type of
             * another type unit, is named where the type was declared. */
            struct text declared = {0};
            struct text *record_scope = scope;
            if (qualify_records && (dwarf_hasattr(&child, DW_AT_specification)
                                    || dwarf_hasattr(&child, DW_AT_signature))) {
                Dwarf_Die declaration = declaring_die(&child);
                append_enclosing_scopes(&declaration, &declared);
                text_append(&declared, "", 0);
                record_scope = &declared;
            }
            if (name != NULL && !is_declaration(&child) && dwarf_aggregate_size(&child, &size) == 0)
                add_type(types, size, record_scope, name);
            if (dwarf_haschildren(&child)) {
                if (qualify_records)
                    collect_scope_types(&child, name ? name : anonymous_scope_name(tag),
                                        record_scope, qualify_records, types, depth + 1);
                else
                    collect_types(&child, scope, qualify_records, types, depth + 1);
            }
            text_free(&declared);
            break;
        }
        case DW_TAG_namespace:
            name = attribute_string(&child, DW_AT_name);
            collect_scope_types(&child, name ? name : anonymous_scope_name(tag), scope,
                                qualify_records, types, depth + 1);
            break;
        case DW_TAG_typedef:
            name = attribute_string(&child, DW_AT_name);
            if (name != NULL && dwarf_aggregate_size(&child, &size) == 0)
                add_type(types, size, scope, name);
            break;
        default:
            break;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
}

static void collect_unit_types(Dwarf *dwarf, struct type_list *types)
{
    struct text scope = {0};
    Dwarf_CU *unit = NULL;
    Dwarf_CU *next = NULL;
    Dwarf_Half version;
    uint8_t unit_type;
    Dwarf_Die unit_die, sub_die;
    while (dwarf_get_units(dwarf, unit, &next, &version, &unit_type, &unit_die, &sub_die) == 0) {
        unit = next;
        /* Skeleton units keep their DIEs in the split unit. */
        Dwarf_Die *root = &unit_die;
        if (unit_type == DW_UT_skeleton) {
            if (dwarf_cu_info(unit, NULL, NULL, NULL, &sub_die, NULL, NULL, NULL) != 0
                || dwarf_tag(&sub_die) != DW_TAG_compile_unit)
                continue;
            root = &sub_die;
        }
        if (dwarf_tag(root) == DW_TAG_invalid)
            continue;
        text_truncate(&scope, 0);
        collect_types(root, &scope, nests_names(root), types, 0);
    }
    text_free(&scope);
}

static int compare_types(const void *left, const void *right)
{
    const struct type_entry *a = left, *b = right;
    int order = strcmp(a->name, b->name);
    if (order != 0)
        return order;
    return (a->size > b->size) - (a->size < b->size);
}

static void handle_types(struct resolver *resolver, const char *path)
{
    struct module *module = module_named(resolver, path);
    if (module == NULL) {
        print_error("types: no module declared with path \"%s\"", path);
    } else if (open_module(resolver, module)) {
        Dwarf_Addr bias;
        /* Without DWARF the list is just empty: not worth a warning, as
         * most system libraries ship without it. */
        Dwarf *dwarf = dwfl_module_getdwarf(module->dwfl_module, &bias);
        if (dwarf != NULL) {
            struct type_list types = {0};
            collect_unit_types(dwarf, &types);
            /* Types moved by dwz into a shared supplementary file. */
            Dwarf *alternate = dwarf_getalt(dwarf);
            if (alternate != NULL)
                collect_unit_types(alternate, &types);
            if (types.count > 0)
                qsort(types.entries, types.count, sizeof *types.entries, compare_types);
            struct text line = {0};
            for (size_t i = 0; i < types.count; i++) {
                if (i > 0 && compare_types(&types.entries[i - 1], &types.entries[i]) == 0)
                    continue;
                text_truncate(&line, 0);
                text_printf(&line, "type\t%" PRIu64, (uint64_t)types.entries[i].size);
                text_append_field(&line, types.entries[i].name);
                text_append(&line, "\n", 1);
                write_out(line.data, line.length);
            }
            text_free(&line);
            for (size_t i = 0; i < types.count; i++)
                free(types.entries[i].name);
            free(types.entries);
        }
    }
    write_out("done\n", 5);
    flush_out();
}

/* ---- module declarations ----------------------------------------------- */

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

    if (resolver->module_count == resolver->module_capacity) {
        resolver->module_capacity = resolver->module_capacity ? resolver->module_capacity * 2 : 64;
        resolver->modules = xrealloc(resolver->modules,
                                     resolver->module_capacity * sizeof *resolver->modules);
    }
    resolver->modules[resolver->module_count++] = module;
    /* An address answered "unknown" may now fall in this module. */
    map_clear(&resolver->answers, free);
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
     * Large, so a batch of answers leaves in few writes. */
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
        } else if (strcmp(command, "resolve") == 0) {
            handle_resolve(&resolver, arguments);
        } else if (strcmp(command, "types") == 0) {
            handle_types(&resolver, arguments ? arguments : "");
        } else if (strcmp(command, "reset") == 0) {
            resolver_free(&resolver);
            resolver.dwfl = new_dwfl();
            write_out("done\n", 5);
            flush_out();
        } else {
            print_error("unknown command \"%s\"", command);
        }
    }
    flush_out();

    free(line);
    resolver_free(&resolver);
    return 0;
}
