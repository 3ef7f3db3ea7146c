/* Folds a table's long call paths for reading: the loops of the reports'
 * fold_paths (src/mprof/report/folding.py, whose docstrings give the
 * rules), on numbers.  tests/python/reference_folding.py keeps the Python
 * this replaced; test_folding.py holds the two to the same folds. */
#include "fold.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

/* As folding.py writes them: a path's parts are joined by SEPARATOR. */
static const char SEPARATOR[] = " > ";
static const char PARTIAL[] = "...";
static const char NO_CHAIN[] = "(no call chain)";
#define SEPARATOR_LENGTH 3
#define PARTIAL_LENGTH 3

#define NO_ROW SIZE_MAX

/* A path's text as the table shows it.  Rows that read the same are told
 * apart by their texts, which must be compared as folding.py's strings
 * were: a frame may be named like a fold ("[2 frames]") or like "...",
 * or hold " > ", and equal texts made of different parts read the same.
 * Kept between rounds, since each round changes only the rows it opens. */
struct shown_text {
    char *bytes;
    size_t size;
    size_t capacity;
    uint64_t hash;
};

/* One run of consecutive folded frames, and what its label names. */
struct fold_run {
    size_t end;      /* the position after its innermost frame */
    bool counted;    /* "[N frames]": own code in it, or more than two origins */
    uint32_t first;  /* its origins in the order they come, when not counted */
    uint32_t second;
    int origins;     /* 1, 2, or 3 for more */
};

/* A frame's flags (struct folder's flags). */
#define OWN 1  /* the program's own code */
#define LONE 2 /* longer than a fold of it alone ("[1 origin]"): it may fold alone */

struct folder {
    const struct mr_fold_table *table;
    size_t *first;              /* per path: its first frame's index in frame_kind */
    int64_t *whole;             /* per path: its length unfolded */
    /* Per frame, what its kind says, read where the frames lie. */
    uint32_t *text;
    uint32_t *origin;
    uint8_t *flags;             /* OWN, LONE */
    uint8_t *shown;             /* per frame: opened to tell rows apart, so never folded */
    uint8_t *hidden;            /* per frame: folded */
    struct shown_text *texts;   /* per path */
    uint8_t *may_fold;          /* scratch for one path's frames */
    /* The rounds' grouping of rows that read the same. */
    size_t *slots;              /* a hash table of rows + 1, 0 empty */
    size_t mask;
    size_t *group;              /* per path: the first row that reads as it does */
    size_t *next;               /* per path: the next row of its group, NO_ROW after the last */
    size_t *tail;               /* per group's first row: its group's last row */
    size_t *opened;             /* the rows a round opened a frame of */
};

static int64_t string_length(const struct mr_fold_table *table, uint32_t string)
{
    return table->string_length[string];
}

static size_t decimal_digits(size_t value)
{
    size_t digits = 1;
    while (value >= 10) {
        value /= 10;
        digits++;
    }
    return digits;
}

/* The run of folded frames that starts at frame first + at, where a path
 * of count frames starts at first: where it ends and what its label
 * says, as _fold_label reads it. */
static void read_run(const struct folder *folder, size_t first, size_t count, const uint8_t *hidden, size_t at,
                     struct fold_run *run)
{
    const uint32_t *origins = folder->origin + first;
    const uint8_t *flags = folder->flags + first;
    bool own = flags[at] & OWN;
    run->first = origins[at];
    run->second = 0;
    run->origins = 1;
    for (at++; at < count && hidden[at]; at++) {
        own |= flags[at] & OWN;
        uint32_t origin = origins[at];
        if (run->origins == 1) {
            if (origin != run->first) {
                run->second = origin;
                run->origins = 2;
            }
        } else if (run->origins == 2 && origin != run->first && origin != run->second) {
            run->origins = 3;
        }
    }
    run->end = at;
    run->counted = own || run->origins > 2;
}

/* _hidden: the frames a path folds, given those shown; none when it fits
 * whole.  The library frames between the outermost and the innermost may
 * fold, but the first of each run that an own frame calls (the API the
 * program used); own frames never do.  A frame that may fold folds with a
 * neighbour that folds, or alone when it is longer than its fold. */
static void fold_path(struct folder *folder, size_t path)
{
    const struct mr_fold_table *table = folder->table;
    size_t first = folder->first[path], count = table->frame_count[path];
    uint8_t *hidden = folder->hidden + first;
    memset(hidden, 0, count);
    if (folder->whole[path] <= table->width || count == 0)
        return;
    const uint8_t *shown = folder->shown + first, *flags = folder->flags + first;
    uint8_t *may_fold = folder->may_fold;
    for (size_t n = 0; n < count; n++) {
        bool called_by_own = n > 0 && (flags[n - 1] & OWN);
        may_fold[n] = n > 0 && n + 1 < count && !shown[n] && !(flags[n] & OWN) && !called_by_own;
    }
    for (size_t n = 0; n < count; n++)
        hidden[n] = may_fold[n] && ((n > 0 && may_fold[n - 1]) || (n + 1 < count && may_fold[n + 1]) ||
                                    (flags[n] & LONE));
}

static bool append(struct shown_text *text, const char *bytes, size_t size)
{
    if (size == 0)
        return true; /* an empty name: text->bytes may still be NULL */
    if (text->size + size > text->capacity) {
        size_t capacity = text->capacity ? text->capacity : 64;
        while (capacity < text->size + size)
            capacity *= 2;
        char *grown = realloc(text->bytes, capacity);
        if (!grown)
            return false;
        text->bytes = grown;
        text->capacity = capacity;
    }
    memcpy(text->bytes + text->size, bytes, size);
    text->size += size;
    return true;
}

static bool append_string(struct shown_text *text, const struct mr_fold_table *table, uint32_t string)
{
    uint64_t start = string ? table->string_end[string - 1] : 0;
    return append(text, table->bytes + start, (size_t)(table->string_end[string] - start));
}

static bool append_label(struct shown_text *text, const struct mr_fold_table *table, const struct fold_run *run,
                         size_t folded)
{
    char digits[24];
    size_t length = decimal_digits(folded);
    for (size_t n = length, value = folded; n-- > 0; value /= 10)
        digits[n] = (char)('0' + value % 10);
    if (!append(text, "[", 1) || !append(text, digits, length) || !append(text, " ", 1))
        return false;
    if (run->counted) {
        if (!append(text, "frames", folded == 1 ? 5 : 6))
            return false;
    } else {
        if (!append_string(text, table, run->first))
            return false;
        if (run->origins == 2 && (!append(text, ", ", 2) || !append_string(text, table, run->second)))
            return false;
    }
    return append(text, "]", 1);
}

static uint64_t hash_bytes(const char *bytes, size_t size)
{
    /* Equal texts must hash the same; the grouping compares the bytes of
     * texts whose hashes are equal, so the hash need only spread them:
     * eight bytes a step, each step mixed (MurmurHash3's constants). */
    uint64_t hash = (uint64_t)size * 0x9e3779b97f4a7c15ULL, word;
    size_t n = 0;
    for (; n + 8 <= size; n += 8) {
        memcpy(&word, bytes + n, 8);
        hash = (hash ^ word) * 0xff51afd7ed558ccdULL;
        hash ^= hash >> 32;
    }
    word = 0;
    if (n < size)
        memcpy(&word, bytes + n, size - n);
    hash = (hash ^ word) * 0xc4ceb9fe1a85ec53ULL;
    return hash ^ (hash >> 29);
}

/* text_of in fold_paths: the path as the table shows it. */
static bool render(struct folder *folder, size_t path)
{
    const struct mr_fold_table *table = folder->table;
    size_t first = folder->first[path], count = table->frame_count[path];
    const uint8_t *hidden = folder->hidden + first;
    struct shown_text *text = &folder->texts[path];
    text->size = 0;
    if (count == 0) {
        if (!append(text, NO_CHAIN, sizeof NO_CHAIN - 1))
            return false;
    } else {
        bool joined = table->partial[path];
        if (joined && !append(text, PARTIAL, PARTIAL_LENGTH))
            return false;
        size_t at = 0;
        while (at < count) {
            if (joined && !append(text, SEPARATOR, SEPARATOR_LENGTH))
                return false;
            joined = true;
            if (!hidden[at]) {
                if (!append_string(text, table, folder->text[first + at]))
                    return false;
                at++;
                continue;
            }
            struct fold_run run;
            read_run(folder, first, count, hidden, at, &run);
            if (!append_label(text, table, &run, run.end - at))
                return false;
            at = run.end;
        }
    }
    text->hash = hash_bytes(text->bytes, text->size);
    return true;
}

static bool same_text(const struct shown_text *a, const struct shown_text *b)
{
    return a->hash == b->hash && a->size == b->size && (a->size == 0 || memcmp(a->bytes, b->bytes, a->size) == 0);
}

/* Groups the rows by their texts: group, next and tail. */
static void group_rows(struct folder *folder)
{
    size_t path_count = folder->table->path_count;
    memset(folder->slots, 0, (folder->mask + 1) * sizeof *folder->slots);
    for (size_t path = 0; path < path_count; path++) {
        const struct shown_text *text = &folder->texts[path];
        size_t slot = (size_t)text->hash & folder->mask;
        folder->next[path] = NO_ROW;
        while (folder->slots[slot] && !same_text(&folder->texts[folder->slots[slot] - 1], text))
            slot = (slot + 1) & folder->mask;
        if (folder->slots[slot]) {
            size_t head = folder->slots[slot] - 1;
            folder->group[path] = head;
            folder->next[folder->tail[head]] = path;
            folder->tail[head] = path;
        } else {
            folder->slots[slot] = path + 1;
            folder->group[path] = path;
            folder->tail[path] = path;
        }
    }
}

/* The folded position a group opens (fold_paths' telling): innermost
 * first, the first where some row's frame reads differently from its first
 * row's, else the innermost; SIZE_MAX when its first row folds nothing.
 * Rows that read the same mostly fold the same positions, but a frame named
 * like a fold can make a shorter row read as a longer one's folds: a row
 * with no frame there differs there (folding.py raised IndexError). */
static size_t telling_position(const struct folder *folder, size_t head)
{
    const struct mr_fold_table *table = folder->table;
    size_t first = folder->first[head], innermost = SIZE_MAX;
    for (size_t at = table->frame_count[head]; at-- > 0;) {
        if (!folder->hidden[first + at])
            continue;
        if (innermost == SIZE_MAX)
            innermost = at;
        uint32_t text = folder->text[first + at];
        for (size_t row = folder->next[head]; row != NO_ROW; row = folder->next[row])
            if (at >= table->frame_count[row] || folder->text[folder->first[row] + at] != text)
                return at;
    }
    return innermost;
}

/* One round: each group of rows that read the same opens one position in
 * every row; the number of rows opened. */
static size_t open_round(struct folder *folder)
{
    const struct mr_fold_table *table = folder->table;
    size_t opened = 0;
    group_rows(folder);
    for (size_t head = 0; head < table->path_count; head++) {
        if (folder->group[head] != head || folder->next[head] == NO_ROW)
            continue;
        size_t at = telling_position(folder, head);
        if (at == SIZE_MAX)
            continue;
        for (size_t row = head; row != NO_ROW; row = folder->next[row]) {
            if (at < table->frame_count[row])
                folder->shown[folder->first[row] + at] = 1;
            folder->opened[opened++] = row;
        }
    }
    return opened;
}

static void free_folder(struct folder *folder)
{
    if (folder->texts)
        for (size_t path = 0; path < folder->table->path_count; path++)
            free(folder->texts[path].bytes);
    free(folder->texts);
    free(folder->first);
    free(folder->whole);
    free(folder->text);
    free(folder->origin);
    free(folder->flags);
    free(folder->shown);
    free(folder->hidden);
    free(folder->may_fold);
    free(folder->slots);
    free(folder->group);
    free(folder->next);
    free(folder->tail);
    free(folder->opened);
}

/* Reads the table's numbers once: where each path starts, its whole
 * length, what each frame's kind says; false when a number is past its
 * table. */
static bool measure(struct folder *folder, size_t *longest)
{
    const struct mr_fold_table *table = folder->table;
    for (size_t string = 1; string < table->string_count; string++)
        if (table->string_end[string] < table->string_end[string - 1])
            return false;
    for (size_t kind = 0; kind < table->kind_count; kind++)
        if (table->kind_text[kind] >= table->string_count || table->kind_origin[kind] >= table->string_count)
            return false;
    size_t frame = 0;
    *longest = 0;
    for (size_t path = 0; path < table->path_count; path++) {
        size_t count = table->frame_count[path];
        folder->first[path] = frame;
        bool partial = table->partial[path];
        int64_t total = partial ? PARTIAL_LENGTH : 0, parts = (int64_t)count + (partial ? 1 : 0);
        for (size_t n = frame; n < frame + count; n++) {
            uint32_t kind = table->frame_kind[n];
            if (kind >= table->kind_count)
                return false;
            uint32_t text = table->kind_text[kind], origin = table->kind_origin[kind];
            bool own = table->kind_own[kind];
            folder->text[n] = text;
            folder->origin[n] = origin;
            int64_t length = string_length(table, text);
            /* len(text) > len("[1 origin]") */
            bool lone = length > 4 + string_length(table, origin);
            folder->flags[n] = (uint8_t)((own ? OWN : 0) | (lone ? LONE : 0));
            total += length;
        }
        folder->whole[path] = total + SEPARATOR_LENGTH * (parts - 1);
        frame += count;
        if (count > *longest)
            *longest = count;
    }
    return true;
}

/* Numbers the runs (runs of them, the first frame of each in run_frame)
 * by the frames (kinds, so objects) they hold, in the order they first
 * come: a third of a big table's folds are another row's too, and Python
 * then makes one object for them. */
static int number_runs(const struct mr_fold_table *table, const uint32_t *run_start, const uint32_t *run_end,
                       const size_t *run_frame, size_t runs, uint32_t *run_number)
{
    size_t slot_count = 16;
    while (slot_count < 2 * runs)
        slot_count *= 2;
    size_t mask = slot_count - 1, numbers = 0;
    size_t *slots = calloc(slot_count, sizeof *slots); /* a run + 1 of each number, 0 empty */
    if (!slots)
        return MR_NO_MEMORY;
    for (size_t run = 0; run < runs; run++) {
        const uint32_t *kinds = table->frame_kind + run_frame[run];
        size_t count = run_end[run] - run_start[run];
        uint64_t hash = count;
        for (size_t n = 0; n < count; n++)
            hash = mix(hash ^ kinds[n]);
        size_t slot = (size_t)hash & mask;
        for (; slots[slot]; slot = (slot + 1) & mask) {
            size_t other = slots[slot] - 1;
            if (run_end[other] - run_start[other] == count &&
                memcmp(table->frame_kind + run_frame[other], kinds, count * sizeof *kinds) == 0)
                break;
        }
        if (slots[slot]) {
            run_number[run] = run_number[slots[slot] - 1];
        } else {
            slots[slot] = run + 1;
            run_number[run] = (uint32_t)numbers++;
        }
    }
    free(slots);
    return MR_OK;
}

int mr_fold_paths(const struct mr_fold_table *table, uint32_t *run_count, uint32_t *run_start, uint32_t *run_end,
                  uint32_t *run_number)
{
    size_t path_count = table->path_count, frames = 0, longest = 0;
    for (size_t path = 0; path < path_count; path++)
        frames += table->frame_count[path];
    struct folder folder = {.table = table};
    size_t slot_count = 16;
    while (slot_count < 2 * path_count)
        slot_count *= 2;
    folder.mask = slot_count - 1;
    /* calloc(0) may return NULL: every block holds one entry at least. */
    folder.first = calloc(path_count + 1, sizeof *folder.first);
    folder.whole = calloc(path_count + 1, sizeof *folder.whole);
    folder.text = calloc(frames + 1, sizeof *folder.text);
    folder.origin = calloc(frames + 1, sizeof *folder.origin);
    folder.flags = calloc(frames + 1, 1);
    folder.shown = calloc(frames + 1, 1);
    folder.hidden = calloc(frames + 1, 1);
    folder.texts = calloc(path_count + 1, sizeof *folder.texts);
    folder.slots = calloc(slot_count, sizeof *folder.slots);
    folder.group = calloc(path_count + 1, sizeof *folder.group);
    folder.next = calloc(path_count + 1, sizeof *folder.next);
    folder.tail = calloc(path_count + 1, sizeof *folder.tail);
    folder.opened = calloc(path_count + 1, sizeof *folder.opened);
    /* Each run's first frame, for number_runs: at most a run a frame. */
    size_t *run_frame = calloc(frames + 1, sizeof *run_frame);
    int status = MR_NO_MEMORY;
    if (!folder.first || !folder.whole || !folder.text || !folder.origin || !folder.flags ||
        !folder.shown || !folder.hidden || !folder.texts || !folder.slots || !folder.group || !folder.next ||
        !folder.tail || !folder.opened || !run_frame)
        goto done;
    if (!measure(&folder, &longest)) {
        status = MR_CORRUPT;
        goto done;
    }
    folder.may_fold = calloc(longest + 1, 1);
    if (!folder.may_fold)
        goto done;
    for (size_t path = 0; path < path_count; path++) {
        fold_path(&folder, path);
        if (!render(&folder, path))
            goto done;
    }
    /* Each round shows a folded frame of the first row of each group at
     * least, so the rounds end. */
    for (size_t opened; (opened = open_round(&folder)) > 0;)
        for (size_t n = 0; n < opened; n++) {
            fold_path(&folder, folder.opened[n]);
            if (!render(&folder, folder.opened[n]))
                goto done;
        }
    size_t runs = 0;
    for (size_t path = 0; path < path_count; path++) {
        size_t count = table->frame_count[path];
        const uint8_t *hidden = folder.hidden + folder.first[path];
        uint32_t made = 0;
        for (size_t at = 0; at < count; at++) {
            if (!hidden[at] || (at > 0 && hidden[at - 1]))
                continue;
            size_t end = at + 1;
            while (end < count && hidden[end])
                end++;
            run_start[runs] = (uint32_t)at;
            run_end[runs] = (uint32_t)end;
            run_frame[runs] = folder.first[path] + at;
            runs++;
            made++;
        }
        run_count[path] = made;
    }
    status = number_runs(table, run_start, run_end, run_frame, runs, run_number);
done:
    free(run_frame);
    free_folder(&folder);
    return status;
}

int mr_fold_kinds(const uint64_t *identity, size_t frame_count, uint32_t *frame_kind, uint32_t *kind_first,
                  size_t *kind_count)
{
    /* An open-addressing table of kind + 1 (0: empty), twice as many
     * slots as kinds, grown as kinds come: a table's frames are mostly
     * the same few thousand objects. */
    if (frame_count > UINT32_MAX)
        return MR_CORRUPT; /* frames are numbered in 32 bits */
    size_t mask = 255, kinds = 0;
    uint32_t *slots = calloc(mask + 1, sizeof *slots);
    if (!slots)
        return MR_NO_MEMORY;
    for (size_t frame = 0; frame < frame_count; frame++) {
        uint64_t key = identity[frame];
        size_t slot = (size_t)mix(key) & mask;
        while (slots[slot] && identity[kind_first[slots[slot] - 1]] != key)
            slot = (slot + 1) & mask;
        if (slots[slot]) {
            frame_kind[frame] = slots[slot] - 1;
            continue;
        }
        kind_first[kinds] = (uint32_t)frame;
        frame_kind[frame] = (uint32_t)kinds;
        slots[slot] = (uint32_t)++kinds;
        if (2 * kinds > mask) {
            size_t grown_mask = 2 * mask + 1;
            uint32_t *grown = calloc(grown_mask + 1, sizeof *grown);
            if (!grown) {
                free(slots);
                return MR_NO_MEMORY;
            }
            for (size_t kind = 0; kind < kinds; kind++) {
                size_t place = (size_t)mix(identity[kind_first[kind]]) & grown_mask;
                while (grown[place])
                    place = (place + 1) & grown_mask;
                grown[place] = (uint32_t)(kind + 1);
            }
            free(slots);
            slots = grown;
            mask = grown_mask;
        }
    }
    free(slots);
    *kind_count = kinds;
    return MR_OK;
}
