/*
 * The modules of the profiled process: their declarations, the check that
 * each file is the one that ran, reporting them to the one offline Dwfl on
 * first use, and each module's ELF symbols sorted by address, the fallback
 * for code without DWARF.
 */

#include "modules.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <elfutils/libdwelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frames.h"
#include "text.h"

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

/* Separate debug files are found through the build-id tree and
 * .gnu_debuglink, as a debugger finds them. */
static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = NULL,
};

Dwfl *new_dwfl(void)
{
    Dwfl *dwfl = dwfl_begin(&offline_callbacks);
    if (dwfl == NULL) {
        fprintf(stderr, "mprof-resolve: cannot start libdwfl: %s\n", dwfl_errmsg(-1));
        exit(1);
    }
    return dwfl;
}

void resolver_free(struct resolver *resolver)
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
    /* Non-blocking, so that a FIFO in the file's place cannot stall the
     * open; its type is checked before anything is read. */
    int fd = open(module->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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

/* Whether any symbol of the module's tables names code it defines: a
 * stripped program's .dynsym holds only what it imports. */
static bool names_code(Dwfl_Module *dwfl_module)
{
    int symbol_count = dwfl_module_getsymtab(dwfl_module);
    for (int i = 0; i < symbol_count; i++) {
        GElf_Sym symbol;
        GElf_Word section_index;
        const char *name = dwfl_module_getsym(dwfl_module, i, &symbol, &section_index);
        int type = GELF_ST_TYPE(symbol.st_info);
        if (name != NULL && name[0] != '\0' && section_index != SHN_UNDEF && section_index != SHN_ABS
            && (type == STT_FUNC || type == STT_GNU_IFUNC))
            return true;
    }
    return false;
}

/* Opens MODULE on first use: checks its file and reports it to the Dwfl, or
 * prints its one warning.  Returns true when it is usable. */
bool open_module(struct resolver *resolver, struct module *module)
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
    /* Looking for DWARF now asks debuginfod too, when it is allowed; the
     * reducer names the modules that stayed without it. */
    Dwarf_Addr dwarf_bias;
    if (dwfl_module_getdwarf(module->dwfl_module, &dwarf_bias) == NULL) {
        print_notice("nodebug", "%s", module->path);
        if (!names_code(module->dwfl_module))
            print_notice("nosymbols", "%s", module->path);
    }
    return true;
}

struct module *module_containing(struct resolver *resolver, uint64_t address)
{
    for (size_t i = 0; i < resolver->module_count; i++) {
        struct module *module = &resolver->modules[i];
        if (address >= module->start && address < module->end)
            return module;
    }
    return NULL;
}

struct module *module_named(struct resolver *resolver, const char *path)
{
    for (size_t i = 0; i < resolver->module_count; i++) {
        if (strcmp(resolver->modules[i].path, path) == 0)
            return &resolver->modules[i];
    }
    return NULL;
}

/* Appends MODULE, taking over its strings.  Declaration order is kept:
 * module_containing gives the first declared module precedence. */
void add_module(struct resolver *resolver, const struct module *module)
{
    if (resolver->module_count == resolver->module_capacity) {
        resolver->module_capacity = resolver->module_capacity ? resolver->module_capacity * 2 : 64;
        resolver->modules = xrealloc(resolver->modules,
                                     resolver->module_capacity * sizeof *resolver->modules);
    }
    resolver->modules[resolver->module_count++] = *module;
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
char *symbol_name(struct module *module, Dwarf_Addr pc)
{
    if (!module->symbols.built)
        build_symbol_index(module->dwfl_module, &module->symbols);
    const struct code_symbol *symbol = find_code_symbol(&module->symbols, pc);
    return symbol ? demangled_copy(symbol->name) : NULL;
}
