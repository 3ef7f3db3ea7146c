/*
 * The "types" request: a module's DWARF types that have a size, each
 * qualified with its namespaces and classes.  Struct definitions, typedefs
 * and their scopes are found by one walk over each unit; function bodies
 * are skipped, as types local to a function are not listed.
 */

#include "types.h"

#include <dwarf.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "text.h"

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

/* Prints one "type" line per distinct (size, name) among DWARF's types,
 * sorted by name. */
void print_types(Dwarf *dwarf)
{
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
