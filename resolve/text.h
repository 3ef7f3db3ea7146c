/* Allocation, growable text and protocol output, shared by all of
 * mprof-resolve (see text.c). */

#ifndef MPROF_RESOLVE_TEXT_H
#define MPROF_RESOLVE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Allocation: there is no sensible partial answer, so running out of
 * memory ends the process with a message on stderr. */
void out_of_memory(void);
void *xrealloc(void *block, size_t size);
char *xstrdup(const char *text);

/* A growable byte buffer, used to build answers before caching them.
 * Zero-initialized means empty; data stays NUL-terminated once allocated. */
struct text {
    char *data;
    size_t length;
    size_t capacity;
};

void text_append(struct text *text, const char *bytes, size_t count);
void text_printf(struct text *text, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
void text_append_field(struct text *text, const char *field);
/* Turns a field escaped as text_append_field does back into its bytes, in
 * place; false when an escape is malformed or names a NUL byte. */
bool unescape_field(char *field);
void text_truncate(struct text *text, size_t length);
void text_free(struct text *text);

/* Output to the reader (stdout). */
void write_out(const char *bytes, size_t count);
void flush_out(void);
void print_notice(const char *kind, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
void print_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

char *demangled_copy(const char *name);

#endif
