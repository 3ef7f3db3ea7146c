/* Reads /proc/self/maps into an array, with the monitor's own memory. */
#include "memory_map.h"

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "scan_memory.h"

/* Room for mappings split after they were counted (add_pieces). */
#define MAPPINGS_SPARE 64u

/* The text of the file, whole, read into a buffer that did not move while
 * it was read: the mappings listed must all be there as listed, the
 * buffer's own among them.  A buffer that had to grow is read into again. */
static char *read_whole(const char *path, size_t *size, size_t *room)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t capacity = 64 * 1024, used = 0;
    char *text = scan_map(capacity);
    bool grew = false;
    while (text) {
        if (used == capacity) {
            char *grown = scan_grow(text, capacity, capacity * 2);
            if (!grown) {
                scan_unmap(text, capacity);
                text = NULL;
                break;
            }
            text = grown;
            capacity *= 2;
            grew = true;
        }
        ssize_t got = read(fd, text + used, capacity - used);
        if (got < 0) {
            scan_unmap(text, capacity);
            text = NULL;
        } else if (got > 0) {
            used += (size_t)got;
        } else if (grew && lseek(fd, 0, SEEK_SET) == 0) {
            grew = false;
            used = 0;
        } else {
            break;
        }
    }
    close(fd);
    *size = used;
    *room = capacity;
    return text;
}

static uintptr_t hex(const char **cursor, const char *end)
{
    uintptr_t value = 0;
    for (const char *c = *cursor; c < end; c++, (*cursor)++) {
        unsigned digit;
        if (*c >= '0' && *c <= '9')
            digit = (unsigned)(*c - '0');
        else if (*c >= 'a' && *c <= 'f')
            digit = (unsigned)(*c - 'a' + 10);
        else
            break;
        value = value << 4 | digit;
    }
    return value;
}

static const char *skip_field(const char *c, const char *end)
{
    while (c < end && *c != ' ')
        c++;
    while (c < end && *c == ' ')
        c++;
    return c;
}

/* One line: start-end perms offset dev inode [path]. */
static bool parse_line(const char *line, const char *end, struct mapping *mapping)
{
    const char *c = line;
    mapping->start = hex(&c, end);
    if (c >= end || *c != '-')
        return false;
    c++;
    mapping->end = hex(&c, end);
    if (c + 5 > end || *c != ' ')
        return false;
    mapping->readable = c[1] == 'r';
    mapping->writable = c[2] == 'w';
    c = skip_field(c + 1, end); /* perms */
    c = skip_field(c, end);     /* offset */
    c = skip_field(c, end);     /* device */
    mapping->file = c < end && !(*c == '0' && (c + 1 == end || c[1] == ' '));
    c = skip_field(c, end); /* inode */
    mapping->heap = (size_t)(end - c) == 6 && !memcmp(c, "[heap]", 6);
    return mapping->start < mapping->end;
}

/* The first part of [start, end) that is the monitor's memory. */
static bool own_within(uintptr_t start, uintptr_t end, uintptr_t *cut_start, uintptr_t *cut_end)
{
    uintptr_t scan_start, scan_end;
    bool reserved = region_reserved_within(start, end, cut_start, cut_end);
    if (!scan_memory_within(start, end, &scan_start, &scan_end))
        return reserved;
    if (!reserved || scan_start < *cut_start) {
        *cut_start = scan_start;
        *cut_end = scan_end;
    }
    return true;
}

static size_t piece(struct mapping *pieces, size_t count, const struct mapping *mapping, uintptr_t start,
                    uintptr_t end, bool own)
{
    if (pieces) {
        pieces[count] = *mapping;
        pieces[count].start = start;
        pieces[count].end = end;
        pieces[count].own = own;
    }
    return count + 1;
}

/* mapping in pieces, each the monitor's or not, into pieces (when not
 * NULL); returns their number. */
static size_t split(const struct mapping *mapping, struct mapping *pieces)
{
    size_t count = 0;
    uintptr_t from = mapping->start, cut_start, cut_end;
    while (from < mapping->end && own_within(from, mapping->end, &cut_start, &cut_end)) {
        if (cut_start > from)
            count = piece(pieces, count, mapping, from, cut_start, false);
        count = piece(pieces, count, mapping, cut_start, cut_end, true);
        from = cut_end;
    }
    if (from < mapping->end)
        count = piece(pieces, count, mapping, from, mapping->end, false);
    return count;
}

/* Calls each(context, mapping) for each line that parses. */
static void each_line(const char *text, size_t size, void (*each)(void *context, const struct mapping *mapping),
                      void *context)
{
    for (const char *line = text, *stop = text + size; line < stop;) {
        const char *end = memchr(line, '\n', (size_t)(stop - line));
        if (!end)
            end = stop;
        struct mapping mapping = {0};
        if (parse_line(line, end, &mapping))
            each(context, &mapping);
        line = end + 1;
    }
}

static void count_pieces(void *context, const struct mapping *mapping)
{
    *(size_t *)context += split(mapping, NULL);
}

/* A thread that could not be stopped may have reserved more since the
 * pieces were counted: where the pieces no longer fit, the mapping is
 * listed whole, not the monitor's, as read (a root, were it one, holds
 * blocks reachable, never lost). */
static void add_pieces(void *context, const struct mapping *mapping)
{
    struct memory_map *map = context;
    size_t room = map->room / sizeof(struct mapping);
    if (map->count + split(mapping, NULL) <= room)
        map->count += split(mapping, &map->mappings[map->count]);
    else if (map->count < room)
        map->mappings[map->count++] = *mapping;
}

bool memory_map_read(struct memory_map *map)
{
    memset(map, 0, sizeof *map);
    size_t size, text_room;
    char *text = read_whole("/proc/self/maps", &size, &text_room);
    if (!text)
        return false;
    map->text = text;
    map->text_room = text_room;
    /* Counted first: the regions the monitor maps later are not listed. */
    size_t pieces = 0;
    each_line(text, size, count_pieces, &pieces);
    map->room = (pieces + MAPPINGS_SPARE) * sizeof(struct mapping);
    map->mappings = scan_map(map->room);
    if (!map->mappings) {
        memory_map_release(map);
        return false;
    }
    each_line(text, size, add_pieces, map);
    return true;
}

void memory_map_release(struct memory_map *map)
{
    if (map->mappings)
        scan_unmap(map->mappings, map->room);
    if (map->text)
        scan_unmap(map->text, map->text_room);
    memset(map, 0, sizeof *map);
}

const struct mapping *memory_map_find(const struct memory_map *map, uintptr_t address)
{
    size_t low = 0, high = map->count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (map->mappings[middle].end <= address)
            low = middle + 1;
        else
            high = middle;
    }
    if (low < map->count && map->mappings[low].start <= address)
        return &map->mappings[low];
    return NULL;
}
