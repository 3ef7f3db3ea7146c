/* Decoding a data file's NODE and PATH payloads (mprof(5)) into arrays.
 * It accepts exactly what the Python reader (sections.py) accepts; where
 * it refuses, that reader is run on the same payload to say why. */
#include "reduce.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

#define UV_MAX_BYTES 10
#define PATH_FIELDS MR_PATH_FIGURES

struct reader {
    const uint8_t *at;
    const uint8_t *end;
};

/* An unsigned LEB128 of at most 10 bytes that fits in 64 bits; longer
 * encodings than needed are allowed, as mprof(5) allows them. */
static bool read_uv(struct reader *reader, uint64_t *value)
{
    uint64_t result = 0;
    for (unsigned byte_number = 0; byte_number < UV_MAX_BYTES; byte_number++) {
        if (reader->at == reader->end)
            return false;
        uint8_t byte = *reader->at++;
        /* The tenth byte may hold only the value's top bit. */
        if (byte_number == UV_MAX_BYTES - 1 && byte > 1)
            return false;
        result |= (uint64_t)(byte & 0x7f) << (7 * byte_number);
        if (!(byte & 0x80)) {
            *value = result;
            return true;
        }
    }
    return false;
}

static bool read_u64(struct reader *reader, uint64_t *value)
{
    if ((size_t)(reader->end - reader->at) < sizeof *value)
        return false;
    uint64_t result = 0;
    for (unsigned i = 0; i < 8; i++)
        result |= (uint64_t)reader->at[i] << (8 * i);
    reader->at += 8;
    *value = result;
    return true;
}

static bool add_checked(uint64_t *total, uint64_t value)
{
    return !__builtin_add_overflow(*total, value, total);
}

void mr_calls_free(struct mr_calls *calls)
{
    if (!calls)
        return;
    free(calls->parent);
    free(calls->address);
    free(calls->path_node);
    free(calls->figures);
    free(calls);
}

static int decode_nodes(struct reader reader, uint64_t address_count, struct mr_calls *calls)
{
    uint64_t count;
    if (!read_u64(&reader, &count))
        return MR_CORRUPT;
    /* Each entry takes two bytes at least: a bigger count is corrupt, and
     * is refused before anything that large is allocated. */
    if (count > (uint64_t)(reader.end - reader.at) / 2)
        return MR_CORRUPT;
    calls->node_count = (size_t)count;
    calls->parent = malloc((count ? count : 1) * sizeof *calls->parent);
    calls->address = malloc((count ? count : 1) * sizeof *calls->address);
    if (!calls->parent || !calls->address)
        return MR_NO_MEMORY;
    for (uint64_t index = 0; index < count; index++) {
        uint64_t up, address;
        if (!read_uv(&reader, &up) || !read_uv(&reader, &address))
            return MR_CORRUPT;
        if (up > index || address >= address_count)
            return MR_CORRUPT;
        calls->parent[index] = up ? (int64_t)(index - up) : -1;
        calls->address[index] = (uint32_t)address;
    }
    return reader.at == reader.end ? MR_OK : MR_CORRUPT;
}

static int decode_paths(struct reader reader, uint64_t max_depth, struct mr_calls *calls)
{
    uint64_t count, fields;
    if (!read_u64(&reader, &count) || !read_u64(&reader, &fields) || fields < PATH_FIELDS)
        return MR_CORRUPT;
    /* An entry is its node and its fields, a byte each at least. */
    uint64_t remaining = (uint64_t)(reader.end - reader.at);
    if (count && (fields >= remaining || count > remaining / (fields + 1)))
        return MR_CORRUPT;
    size_t nodes = calls->node_count;
    uint32_t *depth = malloc((nodes ? nodes : 1) * sizeof *depth);
    uint8_t *seen = calloc(nodes + 1, 1); /* [0]: the empty path */
    calls->path_count = (size_t)count;
    calls->path_node = malloc((count ? count : 1) * sizeof *calls->path_node);
    calls->figures = calloc((count ? count : 1) * MR_FIGURES, sizeof *calls->figures);
    int status = MR_OK;
    if (!depth || !seen || !calls->path_node || !calls->figures) {
        status = MR_NO_MEMORY;
        goto done;
    }
    for (size_t n = 0; n < nodes; n++)
        depth[n] = 1 + (calls->parent[n] >= 0 ? depth[calls->parent[n]] : 0);
    uint64_t totals[PATH_FIELDS] = {0};
    for (uint64_t index = 0; index < count && status == MR_OK; index++) {
        uint64_t node;
        if (!read_uv(&reader, &node) || node > nodes || seen[node] ||
            (node > 0 && depth[node - 1] > max_depth)) {
            status = MR_CORRUPT;
            break;
        }
        seen[node] = 1;
        calls->path_node[index] = (int64_t)node - 1;
        uint64_t *figures = calls->figures + index * MR_FIGURES;
        for (uint64_t field = 0; field < fields; field++) {
            uint64_t value;
            if (!read_uv(&reader, &value)) {
                status = MR_CORRUPT;
                break;
            }
            /* Fields past the known ones come from a newer writer of the
             * same version and are ignored, as mprof(5) says. */
            if (field < PATH_FIELDS) {
                figures[field] = value;
                if (!add_checked(&totals[field], value))
                    status = MR_CORRUPT;
            }
        }
    }
    /* Bytes must add up within 64 bits over all classes together. */
    uint64_t bytes = 0, freed = 0;
    for (unsigned c = 0; c < 4; c++)
        if (!add_checked(&bytes, totals[2 + c]) || !add_checked(&freed, totals[6 + c]))
            status = MR_CORRUPT;
    if (status == MR_OK && reader.at != reader.end)
        status = MR_CORRUPT;
done:
    free(depth);
    free(seen);
    return status;
}

int mr_calls_decode(const uint8_t *nodes, size_t nodes_size, const uint8_t *paths, size_t paths_size,
                    uint64_t address_count, uint64_t max_depth, struct mr_calls **out)
{
    *out = NULL;
    struct mr_calls *calls = calloc(1, sizeof *calls);
    if (!calls)
        return MR_NO_MEMORY;
    int status = decode_nodes((struct reader){nodes, nodes + nodes_size}, address_count, calls);
    if (status == MR_OK)
        status = decode_paths((struct reader){paths, paths + paths_size}, max_depth, calls);
    if (status != MR_OK) {
        mr_calls_free(calls);
        return status;
    }
    *out = calls;
    return MR_OK;
}

void mr_calls_kinds(struct mr_calls *calls, size_t count, const uint64_t *path, const uint64_t *values)
{
    for (size_t n = 0; n < count; n++)
        memcpy(calls->figures + path[n] * MR_FIGURES + MR_PATH_FIGURES, values + n * MR_KIND_FIGURES,
               MR_KIND_FIGURES * sizeof *values);
}

void mr_calls_used(const struct mr_calls *calls, uint8_t *used)
{
    for (size_t n = 0; n < calls->node_count; n++)
        used[calls->address[n]] = 1;
}
