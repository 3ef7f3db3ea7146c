/*
 * Turns one return address into its logical frames: the function whose code
 * holds it, the chain of inlined subroutines down to the innermost one, and
 * each frame's name and file:line, from the module's DWARF, falling back to
 * its ELF symbols.
 *
 * Finding the function goes through a per-unit index built on the unit's
 * first address (see unit_index_of), so that a lookup is a binary search
 * and a walk down one function's inline tree rather than a walk over a whole
 * unit.
 */

#include "frames.h"

#include <dwarf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void unit_index_free(void *pointer)
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
bool nests_names(Dwarf_Die *unit_die)
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

const char *anonymous_scope_name(int tag)
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

const char *attribute_string(Dwarf_Die *die, unsigned int name)
{
    Dwarf_Attribute attribute;
    /* dwarf_formstring accepts NULL, returning NULL. */
    return dwarf_formstring(dwarf_attr_integrate(die, name, &attribute));
}

/* The DIE that declares ENTITY, reached through its abstract origin,
 * specification or type signature: a concrete or inlined function, an
 * out-of-class definition or a type-unit stub sits elsewhere than the
 * declaration, whose parents are the entity's namespaces and classes. */
Dwarf_Die declaring_die(Dwarf_Die *entity)
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
 * origins and specifications.  In C++-like units (NESTED_NAMES, Rust's
 * too): the demangled linkage name, qualified and with parameter types as
 * C++ users know it, else (internal linkage, Rust's #[no_mangle], have
 * none) DW_AT_name qualified with its namespaces and classes.  In C units:
 * DW_AT_name, since a linkage name there is an asm label such as glibc's
 * __GI_ aliases.  A DW_AT_name goes through the demanglers too, so that a
 * mangled one reads as the symbol table's would.  NULL when the DIE has no
 * name.  The caller frees the result. */
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
    char *demangled = demangled_copy(name);
    /* A mangled name carries its own qualification. */
    if (!nested_names || strcmp(demangled, name) != 0)
        return demangled;
    free(demangled);
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
void describe_address(struct resolver *resolver, uint64_t address, struct text *out)
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

