/* Reads /proc/self/maps into an array, with the monitor's own memory. */
#include "memory_map.h"

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "scan_memory.h"

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

bool memory_map_read(struct memory_map *map)
{
    memset(map, 0, sizeof *map);
    size_t size, text_room;
    char *text = read_whole("/proc/self/maps", &size, &text_room);
    if (!text)
        return false;
    size_t lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += text[i] == '\n';
    map->text = text;
    map->text_room = text_room;
    map->room = (lines + 1) * sizeof(struct mapping);
    map->mappings = scan_map(map->room);
    if (map->mappings) {
        for (const char *line = text, *stop = text + size; line < stop;) {
            const char *end = memchr(line, '\n', (size_t)(stop - line));
            if (!end)
                end = stop;
            if (parse_line(line, end, &map->mappings[map->count]))
                map->count++;
            line = end + 1;
        }
    }
    if (!map->mappings) {
        memory_map_release(map);
        return false;
    }
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
