/*
 * mprof-resolve's plumbing: allocation that exits on failure, a growable
 * text buffer in which answers are built, and the output side of the line
 * protocol (described in mprof-resolve.c).  Every other part writes its
 * answers through these, so that the field sanitizing and the flushing rule
 * live in one place.
 */

#include "text.h"

#include <libiberty/demangle.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void out_of_memory(void)
{
    fputs("mprof-resolve: out of memory\n", stderr);
    exit(1);
}

void *xrealloc(void *block, size_t size)
{
    void *grown = realloc(block, size ? size : 1);
    if (grown == NULL)
        out_of_memory();
    return grown;
}

char *xstrdup(const char *text)
{
    char *copy = strdup(text);
    if (copy == NULL)
        out_of_memory();
    return copy;
}

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

void text_append(struct text *text, const char *bytes, size_t count)
{
    text_reserve(text, count);
    memcpy(text->data + text->length, bytes, count);
    text->length += count;
    text->data[text->length] = '\0';
}

void text_printf(struct text *text, const char *format, ...)
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

/* Appends a TAB and then FIELD escaped: a backslash as \\, a control byte
 * as \xNN, so no name or path can break the line structure or be taken for
 * another, and the reader gets every byte back. */
void text_append_field(struct text *text, const char *field)
{
    size_t count = field ? strlen(field) : 0;
    text_reserve(text, 4 * count + 1);
    text->data[text->length++] = '\t';
    for (size_t i = 0; i < count; i++) {
        unsigned char c = (unsigned char)field[i];
        if (c == '\\') {
            text->data[text->length++] = '\\';
            text->data[text->length++] = '\\';
        } else if (c < 0x20 || c == 0x7f) {
            static const char hex[] = "0123456789abcdef";
            text->data[text->length++] = '\\';
            text->data[text->length++] = 'x';
            text->data[text->length++] = hex[c >> 4];
            text->data[text->length++] = hex[c & 15];
        } else {
            text->data[text->length++] = (char)c;
        }
    }
    text->data[text->length] = '\0';
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool unescape_field(char *field)
{
    char *out = field;
    for (const char *in = field; *in; in++) {
        if (*in != '\\') {
            *out++ = *in;
        } else if (in[1] == '\\') {
            *out++ = '\\';
            in++;
        } else if (in[1] == 'x' && hex_digit(in[2]) >= 0 && hex_digit(in[3]) >= 0) {
            int byte = hex_digit(in[2]) << 4 | hex_digit(in[3]);
            if (byte == 0)
                return false;
            *out++ = (char)byte;
            in += 3;
        } else {
            return false;
        }
    }
    *out = '\0';
    return true;
}

void text_truncate(struct text *text, size_t length)
{
    text->length = length;
    if (text->data)
        text->data[length] = '\0';
}

void text_free(struct text *text)
{
    free(text->data);
    *text = (struct text){0};
}

void write_out(const char *bytes, size_t count)
{
    fwrite(bytes, 1, count, stdout);
}

/* A failed flush means the reader is gone: nobody is left to answer. */
void flush_out(void)
{
    if (fflush(stdout) != 0 || ferror(stdout))
        exit(1);
}

static void vprint_notice(const char *kind, const char *format, va_list args)
{
    char *message = NULL;
    if (vasprintf(&message, format, args) < 0)
        out_of_memory();
    struct text line = {0};
    text_append(&line, kind, strlen(kind));
    text_append_field(&line, message);
    text_append(&line, "\n", 1);
    write_out(line.data, line.length);
    text_free(&line);
    free(message);
}

/* Prints "<kind>\t<message>\n" with the message's fields sanitized. */
void print_notice(const char *kind, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vprint_notice(kind, format, args);
    va_end(args);
}

void print_error(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vprint_notice("error", format, args);
    va_end(args);
}

/* Returns the demangled form of a C++ or Rust linkage name, or a copy of
 * NAME when it is neither.  The caller frees it.
 *
 * Rust names are tried first: a legacy Rust name (_ZN...17h<hash>E) is also
 * a well-formed C++ one, which the C++ demangler would leave with its $LT$
 * escapes.  They are kept whole, as rustc-demangle prints them without its
 * alternate flag: legacy with its ::h<16 hex> hash, v0 with its crate
 * disambiguators (alloc[f15a878b47eb696b]::...).  That is what tells apart
 * two instances of one generic function in legacy mangling, or two versions
 * of one crate, and the reports drop it where no other name needs it
 * (src/mprof/report/names.py).  C++ names get no DMGL_VERBOSE, which would
 * spell std::string out as std::basic_string<char, ...>: they read as
 * __cxa_demangle gives them. */
char *demangled_copy(const char *name)
{
    if (name[0] == '_' && (name[1] == 'Z' || name[1] == 'R')) {
        char *demangled = rust_demangle(name, DMGL_VERBOSE);
        if (demangled == NULL && name[1] == 'Z')
            demangled = cplus_demangle_v3(name, DMGL_PARAMS | DMGL_ANSI);
        if (demangled != NULL)
            return demangled;
    }
    return xstrdup(name);
}
