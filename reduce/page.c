/* The HTML page's call path tables: path nodes read from a database, the
 * functions of the paths a table shows, and a table of whole paths written
 * as JSON (page.h).  tests/python/reference_page.py keeps the Python this
 * replaced; test_page_rows.py holds the two to the same text. */
#include "page.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int pg_chains(const int64_t *parent, const int64_t *function, size_t node_count, const int64_t *ends, size_t count,
              uint64_t *stops, int64_t *functions)
{
    uint64_t at = 0;
    for (size_t n = 0; n < count; n++) {
        int64_t end = ends[n];
        if (end >= 0 && (uint64_t)end >= node_count)
            return MR_CORRUPT;
        uint64_t depth = 0;
        for (int64_t step = end; step >= 0; step = parent[step]) {
            /* Parents come first: a walk up ends within node_count steps. */
            if (parent[step] >= step)
                return MR_CORRUPT;
            depth++;
        }
        if (functions) {
            uint64_t place = at + depth;
            for (int64_t step = end; step >= 0; step = parent[step])
                functions[--place] = function[step];
        }
        at += depth;
        stops[n] = at;
    }
    return MR_OK;
}

int pg_fold_labels(const uint64_t *stops, size_t path_count, const uint32_t *frame_kind, size_t frame_count,
                   const uint32_t *kind_origin, const uint8_t *kind_own, size_t kind_count, const uint32_t *run_count,
                   const uint32_t *run_start, const uint32_t *run_end, const uint32_t *run_number,
                   size_t label_count, uint32_t *folded, uint8_t *counted, uint32_t *first, uint32_t *second)
{
    size_t run = 0, labelled = 0;
    uint64_t start = 0;
    for (size_t path = 0; path < path_count; path++) {
        uint64_t stop = stops[path];
        if (stop < start || stop > frame_count)
            return MR_CORRUPT;
        for (uint32_t n = 0; n < run_count[path]; n++, run++) {
            uint32_t number = run_number[run];
            if (number > labelled || number >= label_count || run_end[run] <= run_start[run] ||
                run_end[run] > stop - start)
                return MR_CORRUPT;
            if (number < labelled)
                continue;
            labelled++;
            bool own = false;
            int origins = 0;
            for (uint64_t frame = start + run_start[run]; frame < start + run_end[run]; frame++) {
                uint32_t kind = frame_kind[frame];
                if (kind >= kind_count)
                    return MR_CORRUPT;
                own |= kind_own[kind] != 0;
                uint32_t origin = kind_origin[kind];
                if (origins == 0) {
                    first[number] = origin;
                    second[number] = PG_NONE;
                    origins = 1;
                } else if (origins == 1 && origin != first[number]) {
                    second[number] = origin;
                    origins = 2;
                } else if (origins == 2 && origin != first[number] && origin != second[number]) {
                    origins = 3;
                }
            }
            folded[number] = run_end[run] - run_start[run];
            counted[number] = own || origins > 2;
        }
        start = stop;
    }
    return labelled == label_count ? MR_OK : MR_CORRUPT;
}

/* The page's JSON as it grows. */
struct text {
    char *bytes;
    size_t size, capacity;
    bool failed; /* memory ran out: what follows is dropped */
};

static bool room(struct text *text, size_t more)
{
    if (text->failed)
        return false;
    if (text->size + more <= text->capacity)
        return true;
    size_t capacity = text->capacity ? text->capacity : 1 << 16;
    while (capacity < text->size + more)
        capacity *= 2;
    char *bytes = realloc(text->bytes, capacity);
    if (!bytes) {
        text->failed = true;
        return false;
    }
    text->bytes = bytes;
    text->capacity = capacity;
    return true;
}

static void put(struct text *text, const char *bytes, size_t size)
{
    if (room(text, size)) {
        memcpy(text->bytes + text->size, bytes, size);
        text->size += size;
    }
}

#define PUT(text, literal) put(text, literal, sizeof literal - 1)

/* The digits of a magnitude, right to left, from *end back; a comma
 * between each three with commas.  Returns where they start. */
static char *digits(uint64_t magnitude, char *end, bool commas)
{
    int written = 0;
    do {
        if (commas && written && written % 3 == 0)
            *--end = ',';
        *--end = (char)('0' + magnitude % 10);
        magnitude /= 10;
        written++;
    } while (magnitude);
    return end;
}

static void put_integer(struct text *text, int64_t value, bool commas)
{
    char buffer[32];
    char *end = buffer + sizeof buffer;
    uint64_t magnitude = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
    char *start = digits(magnitude, end, commas);
    if (value < 0)
        *--start = '-';
    put(text, start, (size_t)(end - start));
}

/* tables.parenthesised: "(share)", whole percent, blank below 1%. */
static void put_share(struct text *text, int64_t part, int64_t whole)
{
    __extension__ typedef __int128 wide;
    if (whole <= 0 || (wide)part * 100 < (wide)whole)
        return;
    wide share = (wide)part * 100 / whole; /* part >= 0 here: Python's floor is C's truncation */
    char buffer[48];
    char *end = buffer + sizeof buffer;
    char *start = end;
    do {
        *--start = (char)('0' + (int)(share % 10));
        share /= 10;
    } while (share);
    PUT(text, "(");
    put(text, start, (size_t)(end - start));
    PUT(text, ")");
}

/* Function ids, a comma before each but a list's first (*any: one is
 * already written). */
static void put_functions(struct text *text, const int64_t *functions, size_t count, bool *any)
{
    for (size_t n = 0; n < count; n++) {
        if (*any)
            PUT(text, ",");
        put_integer(text, functions[n], false);
        *any = true;
    }
}

int pg_path_rows(const struct pg_path_rows *rows, char **out, size_t *size)
{
    *out = NULL;
    *size = 0;
    struct text text = {0};
    PUT(&text, "[");
    size_t run = 0;
    uint64_t first = 0;
    for (size_t row = 0; row < rows->row_count; row++) {
        uint64_t stop = rows->stops[row];
        if (stop < first)
            return free(text.bytes), MR_CORRUPT;
        size_t length = (size_t)(stop - first);
        const int64_t *functions = rows->functions + first;
        if (row)
            PUT(&text, ",");
        PUT(&text, "{\"c\":[\"");
        put_integer(&text, rows->count[row], true);
        PUT(&text, "\",\"");
        put_integer(&text, rows->size[row], true);
        PUT(&text, "\",\"");
        put_share(&text, rows->size[row], rows->whole);
        PUT(&text, "\",");
        if (!length) {
            PUT(&text, "[\"(no call chain)\"]]}");
            first = stop;
            continue;
        }
        PUT(&text, "[{\"p\":[");
        size_t at = 0;
        bool any = false;
        for (uint32_t n = 0; n < rows->run_count[row]; n++, run++) {
            size_t start = rows->run_start[run], end = rows->run_end[run];
            uint32_t number = rows->run_number[run];
            if (start < at || end <= start || end > length || number >= rows->label_count)
                return free(text.bytes), MR_CORRUPT;
            put_functions(&text, functions + at, start - at, &any);
            if (any)
                PUT(&text, ",");
            PUT(&text, "{\"fold\":[");
            bool folded = false;
            put_functions(&text, functions + start, end - start, &folded);
            PUT(&text, "],\"t\":");
            uint64_t label_start = number ? rows->label_end[number - 1] : 0;
            put(&text, rows->labels + label_start, (size_t)(rows->label_end[number] - label_start));
            PUT(&text, "}");
            any = true;
            at = end;
        }
        put_functions(&text, functions + at, length - at, &any);
        PUT(&text, "]");
        if (rows->partial[row])
            PUT(&text, ",\"z\":1");
        if (rows->short_names[row])
            PUT(&text, ",\"s\":1");
        PUT(&text, "}]]}");
        first = stop;
    }
    PUT(&text, "]");
    if (text.failed) {
        free(text.bytes);
        return MR_NO_MEMORY;
    }
    *out = text.bytes;
    *size = text.size;
    return MR_OK;
}

void pg_text_free(char *text)
{
    free(text);
}
